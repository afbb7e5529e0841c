# expect: 30:27 Unknown metric | phase.steady has no "put". Allowed: "network_drops", "network_frames", "network_late_max_ms", "network_late_p99_ms", "network_pair", "workload". With several clusters, only workload and network metrics are read here; the rest are per cluster, such as cluster.etcd.phase.<name>.put.p99
# expect: 33:38 Operation not measured here | No workload that cluster.zk.phase.steady covers has "range" in its mix
# With two clusters a phase-wide p99 would mix two stores; each cluster's
# figures are under cluster.<name>, and a cluster measures only its own ops.
cluster "etcd" {
  store = "etcd"
}

cluster "zk" {
  store = "zookeeper"
}

workload "e" {
  cluster = cluster.etcd
  mix     = { put = 1, range = 1 }
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

check "mixed" {
  condition = phase.steady.put.p99 < ms(100)
}
check "not in zk" {
  condition = cluster.zk.phase.steady.range.p99 < ms(100)
}
