# ZooKeeper's two read modes, side by side, and what happens to them when
# the server the readers talk to is cut off from the others.
#
#   sync   sync() first: the server catches up with the leader, then reads;
#          one round trip to the leader more, never behind a write that
#          completed before the sync
#   local  the connected server answers from its own state: no round trip,
#          possibly behind
#
# Readers run open loop (a fixed rate of arrivals), so a read that hangs
# does not hold back the ones after it and error rates count time, not
# round trips. Unlike etcd and Consul, a ZooKeeper server that loses its quorum stops
# serving altogether (read-only mode is off): it drops its clients, and with
# region c cut off they have no other server to go to, so local reads fail
# there too. That is the trade-off this scenario shows. Writers in region a
# keep writing through the majority. Needs root for the network fabric.
#
#   scenario run scenarios/zookeeper-consistency.hcl

description = "ZooKeeper: sync against local reads, steady and with the readers' server cut off"

cluster "main" {
  store     = "zookeeper"
  nodes     = 3
  placement = ["a", "b", "c"]
  zookeeper {
    tick_time  = "500ms"
    init_limit = 10
    sync_limit = 4
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

workload "strong" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "sync"
  keyspace    = 200
  clients     = 150 # enough that 100 reads/s with 1s timeouts never wait for a free client
  timeout     = "1s"
}

workload "weak" {
  region      = "c"
  endpoints   = "local"
  mix         = { get = 1 }
  consistency = "local"
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

check "a synced read costs a round trip to the leader" {
  condition = phase.steady.workload.strong.get.p50 > phase.steady.workload.weak.get.p50
}

check "a server without quorum serves no reads at all" {
  condition = phase.partitioned.workload.weak.get.error_rate > 0.2 && phase.partitioned.workload.strong.get.error_rate > 0.2
}

check "the majority keeps writing" {
  condition = phase.partitioned.workload.writers.availability >= 0.9
}

check "reads are back after the heal" {
  condition = phase.healed.workload.weak.get.error_rate < 0.25
}

check "linearizable" {
  condition = run.linearizable && run.lost_writes == 0
}
