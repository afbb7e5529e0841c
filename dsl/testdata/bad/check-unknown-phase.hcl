# expect: 17:20 Unknown phase | No phase is named "stedy". Did you mean "steady"?
# The check names a phase that does not exist.
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
  condition = phase.stedy.put.p99 < ms(100)
}
