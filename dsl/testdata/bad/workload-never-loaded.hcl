# expect: 11:1 Workload never runs | Workload "readers" has no load in any phase
# A workload no phase runs.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

workload "readers" {
  mix = { get = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
