# expect: 17:15 Unknown name in check | "phases" is none of these. Did you mean "phase"?
# Metrics live under phase.<name> and run.
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
  condition = phases.steady.put.p99 < ms(100)
}
