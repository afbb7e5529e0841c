# expect: 5:11 Invalid value for "nodes" | must be between 1 and 9
# A cluster needs at least one node.
cluster "main" {
  store = "etcd"
  nodes = 0
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
