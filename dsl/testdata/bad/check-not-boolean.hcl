# expect: 17:15 Condition is not true or false | must be a comparison
# A condition must compare something.
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
  condition = phase.steady.put.p99 + 1
}
