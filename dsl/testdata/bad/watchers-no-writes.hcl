# expect: 9:3 Watchers of a workload that never writes | add put (or txn, delete) to the mix
# Watchers are told of the workload's writes; a read-only mix gives them nothing.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "cfg" {
  watchers = 10
  mix      = { get = 1 }
}

phase "p" {
  duration = "10s"
  load "cfg" {}
}
