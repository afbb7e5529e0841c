# A 3-server Consul cluster on loopback, using the KV store.
#
# Consul's raft timings all scale with raft_multiplier (1..10, default 5):
# elections and heartbeats take 1000ms x N, the leader lease 500ms x N. 1 is
# what HashiCorp recommends for production servers.
#
# Reads come in three modes: "default" (the leader answers, but may briefly
# serve a stale read after losing leadership), "consistent" (the leader
# checks with a quorum first) and "stale" (any server answers).
#
#   scenario plan examples/consul-basic.hcl

description = "3-server Consul: KV writes and the three read modes"

cluster "consul" {
  store = "consul"
  nodes = 3

  consul {
    raft_multiplier = 1
  }
}

workload "kv" {
  mix         = { put = 0.3, get = 0.7 }
  consistency = "consistent"
  value_size  = 512
  keyspace    = 5000
  clients     = 16
}

phase "warmup" {
  duration = "10s"
  load "kv" {
    rate = ramp(50, 400) # open loop: arrivals per second, rising linearly
  }
}

phase "steady" {
  duration = "30s"
  load "kv" {
    rate = 400
  }
}

check "reads" {
  condition = phase.steady.get.p99 < ms(100)
}

check "throughput kept up" {
  # Open loop: if the store falls behind, throughput drops below the rate.
  condition = phase.steady.throughput >= 0.95 * 400
}
