# One cluster of each store, their knobs, and workloads that pick one.
cluster "etcd" {
  store   = "etcd"
  version = "3.5.17"
  nodes   = 1
}

cluster "zk" {
  store    = "zookeeper"
  provider = "docker"
  image    = "zookeeper:3.8"
  zookeeper {
    tick_time        = "500ms"
    init_limit       = 10
    sync_limit       = 5
    snap_count       = 100000
    max_client_cnxns = 0
    jvm_heap         = "1GiB"
  }
}

cluster "consul" {
  store         = "consul"
  nodes         = 5
  binary        = "/opt/consul/bin/consul"
  ready_timeout = "2m"
  consul {
    raft_multiplier         = 2
    heartbeat_timeout       = "2s"
    election_timeout        = "2s"
    leader_lease_timeout    = "1s"
    raft_snapshot_threshold = 8192
    raft_snapshot_interval  = "30s"
  }
}

workload "e" {
  cluster = cluster.etcd
  mix     = { range = 1, txn = 1 }
}

workload "z" {
  cluster     = cluster.zk
  mix         = { put = 1, delete = 1 }
  consistency = "sync"
}

workload "c" {
  cluster     = cluster.consul
  mix         = { get = 1 }
  consistency = "stale"
  preload     = false
}

phase "all" {
  duration = "30s"
  load "e" {}
  load "z" {}
  load "c" {}
  fault "kill" {
    cluster = cluster.consul
    target  = "leader"
    at      = "10s"
  }
}
