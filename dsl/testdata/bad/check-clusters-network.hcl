# expect: 32:29 Network metric under a cluster | The clusters share one network, so network_late_p99_ms is the run's, not zk's: read it without cluster.zk, such as run.network_late_p99_ms.
# The clusters share one network: its figures are read once, for the run,
# with nodes named by cluster (etcd-n1), not per cluster.
cluster "etcd" {
  store = "etcd"
}

cluster "zk" {
  store = "zookeeper"
}

workload "e" {
  cluster = cluster.etcd
  mix     = { put = 1 }
}

workload "z" {
  cluster = cluster.zk
  mix     = { put = 1 }
}

phase "steady" {
  duration = "30s"
  load "e" {}
  load "z" {}
}

check "shared" {
  condition = run.network_late_p99_ms < 1 && phase.steady.network_pair["etcd-n1"]["zk-n2"].packets > 0
}
check "per cluster" {
  condition = cluster.zk.run.network_late_p99_ms < 1
}
