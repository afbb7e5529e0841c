# transfer_leader hands the leadership to a chosen node, as an operator does
# before taking the leader down for maintenance (`etcdctl move-leader`,
# `consul operator raft transfer-leader`). The old leader stays up; writes
# pause only while the leadership moves, far less than the election timeout
# a failover costs. ZooKeeper has no such operation, and is refused.
#
# The target is the node that is to lead: a number, or "follower" (one drawn
# from the nodes that do not lead when the fault fires). It also pins the
# leader where a scenario needs it, as etcd-geo.hcl does.
#
#   scenario plan examples/fault-transfer_leader.hcl

description = "etcd: hand the leadership over, then to a follower every 10s, against a kill"
seed        = 7

cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    heartbeat_interval = "100ms"
    election_timeout   = "1s"
  }
}

workload "writers" {
  mix     = { put = 1 }
  clients = 10
  timeout = "2s"
}

phase "handover" {
  duration = "10s"
  load "writers" {}

  fault "transfer_leader" {
    target = 2
    at     = "3s"
  }
}

phase "rotation" {
  duration = "30s"
  load "writers" {}

  # occurrences rotation/transfer_leader#1 .. #3
  fault "transfer_leader" {
    target = "follower"
    at     = "2s"
    every  = "10s"
  }
}

phase "failover" {
  duration = "15s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "3s"
    restart_after = "5s"
  }
}

check "a handover is quicker than a failover" {
  condition = phase.handover.max_gap < ms(500) && phase.rotation.max_gap < ms(500)
  message   = "a transfer pauses writes for about a round trip; a failover for an election timeout"
}

check "the handovers happened" {
  condition = phase.handover.leader_elected < seconds(1) && phase.rotation.elections >= 3
}

check "failover" {
  condition = phase.failover.failover_time < seconds(5)
}
