# etcd's two read modes, side by side, and what each gives up when a member
# is cut off from the others.
#
#   linearizable  the member confirms with a quorum that it is up to date
#                 (ReadIndex): one round trip more, never stale
#   serializable  the member answers from its own state: no round trip,
#                 possibly stale, and still answers without a quorum
#
# Readers run open loop (a fixed rate of arrivals), so a read that hangs
# does not hold back the ones after it and error rates count time, not
# round trips. The readers sit with n3 in region "c" and talk only to it. The partition
# cuts region c (n3 and its readers) off from a and b: n3 keeps answering
# serializable reads, while its linearizable reads cannot reach a quorum and
# time out. Writers in region a keep writing through the majority. Needs
# root for the network fabric.
#
#   scenario run scenarios/etcd-consistency.hcl

description = "etcd: linearizable against serializable reads, steady and with the reading member cut off"

cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["a", "b", "c"]
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

workload "strong" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "linearizable"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

workload "weak" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "serializable"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

phase "steady" {
  duration = "10s"
  load "writers" {}
  load "strong" {
    rate = 100
  }
  load "weak" {
    rate = 100
  }
}

phase "partitioned" {
  duration = "15s"
  load "writers" {}
  load "strong" {
    rate = 100
  }
  load "weak" {
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
  load "strong" {
    rate = 100
  }
  load "weak" {
    rate = 100
  }
}

check "a strong read costs a quorum round trip" {
  condition = phase.steady.workload.strong.get.p50 > phase.steady.workload.weak.get.p50
}

check "serializable reads survive the cut" {
  condition = phase.partitioned.workload.weak.get.error_rate < 0.01
}

check "linearizable reads do not" {
  condition = phase.partitioned.workload.strong.get.error_rate > 0.2
}

check "the majority keeps writing" {
  condition = phase.partitioned.workload.writers.availability >= 0.95
}

check "all reads are back after the heal" {
  condition = phase.healed.workload.strong.get.error_rate < 0.25
}

check "linearizable" {
  condition = run.linearizable && run.lost_writes == 0
}
