# expect: 17:16 Fault repeats before it ends | Each occurrence lasts 5s
# Each pause lasts 5s but a new one starts every 3s.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "pause" {
    target   = "random"
    duration = "5s"
    every    = "3s"
  }
}
