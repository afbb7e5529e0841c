# expect: 15:14 Transfer to one node | The leader leads already.
# A transfer to the leader would do nothing.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "transfer_leader" {
    target = "leader"
  }
}
