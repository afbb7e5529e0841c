# expect: 5:11 Invalid value for "nodes" | must be between 1 and 9
# More nodes than a cluster may have.
cluster "main" {
  store = "etcd"
  nodes = 12
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
