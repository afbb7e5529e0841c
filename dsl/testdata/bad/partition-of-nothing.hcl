# expect: 14:3 Partition of nothing | Say what to cut
# A partition with neither groups nor target.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "partition" {
    at       = "5s"
    duration = "10s"
  }
}
