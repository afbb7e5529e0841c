# expect: 15:14 Empty target | List at least one node
# An empty target list names no node.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target = []
  }
}
