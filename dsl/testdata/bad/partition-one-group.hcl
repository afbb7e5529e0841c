# expect: 15:16 Invalid groups | List at least two groups
# A partition needs two sides.
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
    groups   = [[1, 2, 3]]
    duration = "10s"
  }
}
