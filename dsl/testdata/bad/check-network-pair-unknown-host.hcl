# expect: 18:43 Unknown metric | phase.steady.network_pair.n1 has no "n4". Did you mean "n3"? Allowed: "client-local", "n2", "n3", "wk-w-1".
# Three nodes: n1 to n3, the clients' host of their region, and the load
# worker's pod of a run with the kubernetes provider.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "steady" {
  duration = "30s"
  load "w" {}
}

check "loss" {
  condition = phase.steady.network_pair.n1.n4.lost_share < 0.05
}
