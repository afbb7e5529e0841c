# One file, three stores, each read in its strong and its weak mode, under the
# same fault: one follower cut off from the others. Weak reads from the
# isolated member keep answering (and may be stale); strong reads through it
# fail or wait.
#
#   etcd       linearizable | serializable
#   zookeeper  sync         | local
#   consul     consistent   | stale          (and "default": leader, no quorum check)
#
#   scenario plan examples/consistency-modes.hcl

description = "strong versus weak reads on etcd, ZooKeeper and Consul under a partition"

cluster "etcd" {
  store = "etcd"
  nodes = 3
}

cluster "zk" {
  store = "zookeeper"
  nodes = 3
}

cluster "consul" {
  store = "consul"
  nodes = 3
}

# With several clusters, every workload and fault says which one it uses.
workload "etcd-strong" {
  cluster     = cluster.etcd
  mix         = { put = 0.2, get = 0.8 }
  consistency = "linearizable"
}

workload "etcd-weak" {
  cluster     = cluster.etcd
  mix         = { put = 0.2, get = 0.8 }
  consistency = "serializable"
}

workload "zk-strong" {
  cluster     = cluster.zk
  mix         = { put = 0.2, get = 0.8 }
  consistency = "sync"
}

workload "zk-weak" {
  cluster     = cluster.zk
  mix         = { put = 0.2, get = 0.8 }
  consistency = "local"
}

workload "consul-strong" {
  cluster     = cluster.consul
  mix         = { put = 0.2, get = 0.8 }
  consistency = "consistent"
}

workload "consul-weak" {
  cluster     = cluster.consul
  mix         = { put = 0.2, get = 0.8 }
  consistency = "stale"
}

phase "partitioned" {
  duration = "40s"
  load "etcd-strong" {}
  load "etcd-weak" {}
  load "zk-strong" {}
  load "zk-weak" {}
  load "consul-strong" {}
  load "consul-weak" {}

  fault "partition" {
    name     = "cut-etcd-follower"
    cluster  = cluster.etcd
    target   = "follower"
    at       = "10s"
    duration = "20s"
  }
  fault "partition" {
    name     = "cut-zk-follower"
    cluster  = cluster.zk
    target   = "follower"
    at       = "10s"
    duration = "20s"
  }
  fault "partition" {
    name     = "cut-consul-follower"
    cluster  = cluster.consul
    target   = "follower"
    at       = "10s"
    duration = "20s"
  }
}

# Weak reads stay available on every store; how stale they were is in the
# report. The run-wide linearizability check covers the strong workloads.
check "etcd weak reads stay available" {
  condition = phase.partitioned.workload.etcd-weak.get.error_rate < 0.05
}

check "zookeeper weak reads stay available" {
  condition = phase.partitioned.workload.zk-weak.get.error_rate < 0.05
}

check "consul stale reads stay available" {
  condition = phase.partitioned.workload.consul-weak.get.error_rate < 0.05
}
