# expect: 8:20 Unknown cluster | No cluster is named "mian". Did you mean "main"?
# A reference to a cluster that does not exist.
cluster "main" {
  store = "etcd"
}

workload "w" {
  cluster = cluster.mian
  mix     = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
