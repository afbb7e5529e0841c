# Kill the ZooKeeper leader under a steady write load and measure the
# failover: how long until a new leader is elected, how long writes stop, and
# whether anything acknowledged was lost or read out of order.
#
# A SIGKILLed leader's sockets are closed by the kernel, so its followers
# notice at once and start a leader election (FastLeaderElection); a leader
# that hangs instead is only noticed after sync_limit ticks. Clients of the
# dead server lose their connection and move to another server with the same
# session, which survives as long as the election is shorter than the
# session timeout.
#
#   scenario run scenarios/zookeeper-leader-failover.hcl

description = "ZooKeeper: kill the leader under writes, measure failover, check correctness"

cluster "main" {
  store = "zookeeper"
  nodes = 3
  zookeeper {
    tick_time  = "500ms"
    init_limit = 10
    sync_limit = 4 # a silent leader is dropped after 2s
  }
}

workload "writers" {
  mix         = { put = 0.7, get = 0.3 }
  consistency = "sync" # sync() then read: every read sees the writes before it
  keyspace    = 500
  value_size  = 128
  clients     = 8
  timeout     = "2s"
}

phase "baseline" {
  duration = "5s"
  load "writers" {}
}

phase "failover" {
  duration = "15s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "3s"
    restart_after = "8s"
  }
}

phase "recovered" {
  duration = "5s"
  load "writers" {}
}

check "new leader quickly" {
  condition = phase.failover.leader_elected < seconds(5)
}

check "writes resume" {
  condition = phase.failover.failover_time < seconds(5) && phase.failover.max_gap < seconds(5)
}

check "an election happened" {
  condition = phase.failover.elections >= 1
}

check "healthy afterwards" {
  condition = phase.recovered.availability >= 0.99
}

check "no acknowledged write lost" {
  condition = run.lost_writes == 0
}

check "linearizable" {
  condition = run.linearizable
}
