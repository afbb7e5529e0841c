# stop sends SIGTERM: the node shuts down cleanly (an etcd leader hands off
# leadership first), as in a rolling upgrade. restart_after brings it back.
#
#   scenario plan examples/fault-stop.hcl

description = "etcd: a graceful stop of the leader costs less than a kill"

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "writers" {
  mix     = { put = 1 }
  clients = 10
}

phase "graceful" {
  duration = "30s"
  load "writers" {}

  fault "stop" {
    target        = "leader"
    at            = "5s"
    restart_after = "10s"
  }
}

phase "stop-a-follower" {
  duration = "30s"
  load "writers" {}

  # Without restart_after the node stays down: two of three keep a quorum.
  fault "stop" {
    target = 3
    at     = "5s"
  }
}

check "graceful handoff" {
  condition = phase.graceful.max_gap < seconds(2)
}

check "quorum survives a follower" {
  condition = phase.stop-a-follower.availability >= 0.99
}
