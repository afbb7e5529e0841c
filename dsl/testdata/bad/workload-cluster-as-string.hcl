# expect: 8:13 Invalid cluster reference | `cluster = cluster.main` (no quotes)
# Clusters are referred to by reference, not by a quoted name.
cluster "main" {
  store = "etcd"
}

workload "w" {
  cluster = "main"
  mix     = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
