# expect: 17:19 Invalid value for "parallelism" | "parallelism" must be between 0 and 64.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "disk" {
    target      = 1
    at          = "1s"
    duration    = "1s"
    parallelism = 1000
  }
}
