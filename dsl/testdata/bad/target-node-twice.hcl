# expect: 17:18 Node listed twice | n1 is already in this target at
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    at     = "1s"
    # Listing a node twice is a mistake, not a stronger kill.
    target = [1, 1]
  }
}
