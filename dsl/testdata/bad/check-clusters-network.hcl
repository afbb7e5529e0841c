# expect: 32:29 Unknown metric | cluster.zk.run has no "network_late_p99_ms". Allowed: "availability", "count", "cpu_wait_share", "elections", "error_rate", "errors", "errors_by", "failover_time", "floor_excess", "late_queued", "late_start_share", "late_starts", "leader_elected", "leader_unknown_time", "linearizable", "lost_writes", "max_gap", "no_leader_time", "put", "rejoin_time", "runner_wait_share", "server", "steal_share", "throughput", "time_availability", "workload", "write_floor". The network's figures (network_*) are the run's, shared by its clusters: read them without cluster.<name>, such as run.network_late_p99_ms.
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
