# kill sends SIGKILL: the node dies without a word, as in a power cut. With
# restart_after it is started again (same data directory) after that long;
# without, it stays down for the rest of the run.
#
# Targets are resolved when the fault fires: "leader", "follower",
# "minority", "majority", "random", "all", a node number (2), a list ([1, 3])
# or `region = "..."`. "random" and "follower" draw from a seeded stream, so
# a run is reproducible; set `seed` on the fault to pick another draw.
#
#   scenario plan examples/fault-kill.hcl

description = "etcd: kill the leader, then kill random members again and again"
seed        = 7

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "writers" {
  mix     = { put = 1 }
  clients = 10
  timeout = "2s"
}

phase "steady" {
  duration = "15s"
  load "writers" {}
}

phase "leader-kill" {
  duration = "30s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "5s"
    restart_after = "10s"
  }
}

phase "chaos" {
  duration = "60s"
  load "writers" {}

  # Every 15s, from 5s on, a random member is killed and restarted 5s later:
  # occurrences chaos/kill#1 .. chaos/kill#4.
  fault "kill" {
    target        = "random"
    at            = "5s"
    every         = "15s"
    restart_after = "5s"
  }
}

check "failover" {
  condition = phase.leader-kill.failover_time < seconds(5) && phase.leader-kill.max_gap < seconds(5)
}

check "chaos availability" {
  condition = phase.chaos.availability >= 0.9
}

check "elections happened" {
  condition = phase.leader-kill.elections >= 1
}
