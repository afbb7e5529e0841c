# expect: 17:15 Incomplete metric reference | phase.steady.put is a group of metrics; name one of them
# phase.steady.put is a group of metrics, not a number.
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
  condition = phase.steady.put < ms(100)
}
