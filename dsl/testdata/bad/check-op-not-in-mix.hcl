# expect: 17:27 Operation not measured here | has "get" in its mix
# The phase only writes: there are no get metrics.
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

check "reads" {
  condition = phase.steady.get.p99 < ms(100)
}
