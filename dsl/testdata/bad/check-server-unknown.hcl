# expect: 17:34 Unknown metric | phase.steady.server has no "wal_fsync". Did you mean "fsync"?
# The store's own metrics go by our names (fsync, commit, ...), not the store's.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "w" {
  mix = { put = 1 }
}

phase "steady" {
  duration = "10s"
  load "w" {}
}
check "disk" {
  condition = phase.steady.server.wal_fsync.p99 < ms(10)
}
