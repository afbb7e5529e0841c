# expect: 17:5 Both between and target | not both
# A network fault shapes one link or some nodes' paths, not both.
cluster "main" {
  store     = "etcd"
  placement = ["a", "b", "b"]
}

workload "w" {
  region = "a"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "network" {
    between = ["a", "b"]
    target  = "leader"
    rtt     = "100ms"
  }
}
