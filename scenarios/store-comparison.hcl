# dbtester's write benchmark on etcd, ZooKeeper and Consul, one sweep point
# per store: 256-byte keys, 1 KiB values, unique keys written in sequence,
# clients ramped up and then held. dbtester ran 1,000 clients over 100
# connections on 8-core machines; this is the same shape scaled to a 2-core
# machine running all three members of each cluster. Each store runs alone,
# on a cluster of its own that is torn down before the next one starts, and
# the run ends with the points side by side (also in comparison.txt).
#
#   scenario run scenarios/store-comparison.hcl
#   scenario run scenarios/store-comparison.hcl --var store=consul   # one store

description = "dbtester's write workload on etcd, ZooKeeper and Consul, side by side"

variable "store" {
  type    = string
  default = "etcd"
}

sweep {
  matrix = { store = ["etcd", "zookeeper", "consul"] }
}

# Every store at its default version and its own default tuning (Consul's
# raft_multiplier stays 5, as dbtester left it).
cluster "main" {
  store = var.store
  nodes = 3
}

workload "write" {
  mix          = { put = 1 }
  key_size     = 256
  value_size   = "1KiB"
  keyspace     = 1000000 # more keys than the run writes: every put is a new key
  distribution = "sequential"
  clients      = 64
  conns        = 8
  timeout      = "5s"
}

# dbtester stepped its clients 1, 10, 50, 100, ...; a ramp covers the same
# ground without restarting the load at each step.
phase "ramp" {
  duration = "15s"
  load "write" {
    clients = ramp(1, 64)
  }
}

phase "steady" {
  duration = "20s"
  load "write" {}
}

check "every write answered" {
  condition = phase.steady.availability >= 0.99
}

check "writes commit in under a second" {
  condition = phase.steady.put.p99 < seconds(1)
}
