# expect: 7:1 Duplicate cluster "main" | already defined at testdata/bad/duplicate-cluster.hcl:3,1-15
# Two clusters with one name.
cluster "main" {
  store = "etcd"
}

cluster "main" {
  store = "zookeeper"
}

workload "w" {
  cluster = cluster.main
  mix     = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
