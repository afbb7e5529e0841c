# expect: 15:5 Both groups and target | not both
# A partition cuts between groups or isolates a target, not both.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "partition" {
    groups = [[1], [2, 3]]
    target = "leader"
  }
}
