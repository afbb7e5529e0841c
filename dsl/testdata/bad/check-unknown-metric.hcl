# expect: 17:31 Unknown metric | has no "p98". Did you mean "p99"?
# p98 is not measured; p99 is.
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

check "latency" {
  condition = phase.steady.put.p98 < ms(100)
}
