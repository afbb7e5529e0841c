# Consul's three read modes, side by side, and what each gives up when the
# server the readers talk to is cut off from the others.
#
#   consistent  the leader confirms with a quorum that it still leads, then
#               answers: linearizable, a round trip more
#   default     the leader answers without that check: a deposed leader may
#               answer stale data for up to a leader lease
#   stale       any server answers from its own state: possibly behind, and
#               still answers without a leader
#
# Readers run open loop (a fixed rate of arrivals), so a read that hangs
# does not hold back the ones after it and error rates count time, not
# round trips. The readers sit with n3 in region "c" and talk only to it. The partition
# cuts region c off: n3 keeps answering stale reads; default and consistent
# reads need the leader, which n3 cannot reach (or, if n3 led, it loses the
# leadership), so they fail. Writers in region a keep writing through the
# majority. Needs root for the network fabric.
#
#   scenario run scenarios/consul-consistency.hcl

description = "Consul: consistent, default and stale reads, steady and with the readers' server cut off"

cluster "main" {
  store     = "consul"
  nodes     = 3
  placement = ["a", "b", "c"]
  consul {
    raft_multiplier = 1
  }
}

network {
  default {
    rtt = "10ms"
  }
}

workload "writers" {
  region    = "a"
  endpoints = "local"
  mix       = { put = 1 }
  keyspace  = 200
  clients   = 4
  timeout   = "2s"
}

workload "consistent" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "consistent"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

workload "default" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "default"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

workload "stale" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "stale"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

phase "steady" {
  duration = "10s"
  load "writers" {}
  load "consistent" {
    rate = 100
  }
  load "default" {
    rate = 100
  }
  load "stale" {
    rate = 100
  }
}

phase "partitioned" {
  duration = "15s"
  load "writers" {}
  load "consistent" {
    rate = 100
  }
  load "default" {
    rate = 100
  }
  load "stale" {
    rate = 100
  }

  fault "partition" {
    groups   = [["a", "b"], ["c"]]
    at       = "3s"
    duration = "8s"
  }
}

phase "healed" {
  # TCP connections that lost packets for the whole cut retransmit on an
  # exponential backoff: a few seconds pass after the heal before they do.
  duration = "15s"
  load "writers" {}
  load "consistent" {
    rate = 100
  }
  load "default" {
    rate = 100
  }
  load "stale" {
    rate = 100
  }
}

check "stale reads skip the leader" {
  condition = phase.steady.workload.stale.get.p50 < phase.steady.workload.default.get.p50
}

check "stale reads survive the cut" {
  condition = phase.partitioned.workload.stale.get.error_rate < 0.01
}

check "reads through the leader do not" {
  condition = phase.partitioned.workload.consistent.get.error_rate > 0.2 && phase.partitioned.workload.default.get.error_rate > 0.2
}

check "the majority keeps writing" {
  condition = phase.partitioned.workload.writers.availability >= 0.9
}

check "all reads are back after the heal" {
  condition = phase.healed.workload.consistent.get.error_rate < 0.25
}

check "linearizable" {
  condition = run.linearizable && run.lost_writes == 0
}
