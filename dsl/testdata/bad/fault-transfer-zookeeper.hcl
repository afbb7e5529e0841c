# expect: 14:9 No leadership transfer | runs zookeeper, which cannot hand its leadership to a chosen node
# ZooKeeper has no leadership transfer.
cluster "main" {
  store = "zookeeper"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "transfer_leader" {
    target = 2
  }
}
