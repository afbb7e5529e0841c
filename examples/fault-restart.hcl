# restart stops a node and starts it again: restart_after is how long it
# stays down ("0s", the default, means at once). It models a crash-looping
# or redeployed member.
#
#   scenario plan examples/fault-restart.hcl

description = "etcd: restart the leader at once, then a follower after a pause"

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "writers" {
  mix     = { put = 0.8, get = 0.2 }
  clients = 10
}

phase "restarts" {
  duration = "40s"
  load "writers" {}

  fault "restart" {
    target = "leader"
    at     = "5s"
  }

  fault "restart" {
    target        = "follower"
    at            = "20s"
    restart_after = "5s"
  }
}

check "restarts are cheap" {
  condition = phase.restarts.availability >= 0.95
}
