# expect: 9:17 Consistency mode not supported by the store | etcd has no "sync" read mode
# "sync" is ZooKeeper's mode, not etcd's.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix         = { get = 1 }
  consistency = "sync"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
