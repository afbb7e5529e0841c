# expect: 16:14 Target names no node | A 1-node cluster has no minority
# A one-node cluster has no minority to kill.
cluster "main" {
  store = "etcd"
  nodes = 1
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target = "minority"
  }
}
