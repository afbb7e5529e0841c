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

# A transfer's successor campaigns at once, where a failover's waits out an
# election timeout (1 s here). Its writes are another matter: etcd drops the
# proposals its followers had forwarded to the old leader, and their clients
# wait out their whole timeout (etcd-io/etcd#8975; 2 s here). When every
# client had one in flight, no write completed for those 2 s, so the phases'
# max_gap is not the check for this.
check "a handover is quicker than a failover" {
  condition = phase.handover.leader_elected < ms(500) && phase.rotation.leader_elected < ms(500)
  message   = "a transfer's successor leads within a round trip or two; a failover's after an election timeout"
}

check "the handovers happened" {
  condition = phase.rotation.elections >= 3
}

check "failover" {
  condition = phase.failover.failover_time < seconds(5)
}
