# Kill the etcd leader under a steady write load and measure the failover:
# how long until a new leader is elected, how long writes stop, and whether
# anything acknowledged was lost or read out of order.
#
# etcd's defaults (heartbeat 100ms, election timeout 1000ms) mean a follower
# waits 1-2 election timeouts before it campaigns, so expect the write gap to
# sit between one election timeout and a few seconds.
#
#   scenario run scenarios/etcd-leader-failover.hcl

description = "etcd: kill the leader under writes, measure failover, check correctness"

variable "election_timeout" {
  type    = string
  default = "1000ms"
}

cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    heartbeat_interval = "100ms"
    election_timeout   = var.election_timeout
  }
}

workload "writers" {
  mix         = { put = 0.7, get = 0.3 }
  consistency = "linearizable"
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

  # SIGKILL the leader 3s in; bring it back on the same data dir 8s later.
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
  message   = "a 3-node cluster with a 1s election timeout should elect a new leader within a few seconds"
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
