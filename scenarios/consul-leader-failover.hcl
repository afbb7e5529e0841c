# Kill the Consul leader under a steady KV write load and measure the
# failover: how long until a new leader is elected, how long writes stop, and
# whether anything acknowledged was lost or read out of order.
#
# Consul's raft timings scale with raft_multiplier: with 1 (HashiCorp's
# production advice) followers wait a heartbeat timeout of 1s without news
# from the leader, then an election timeout of up to 1s more before they
# campaign; with the default of 5, five times as long.
#
#   scenario run scenarios/consul-leader-failover.hcl
#   scenario run scenarios/consul-leader-failover.hcl --var raft_multiplier=5

description = "Consul: kill the leader under KV writes, measure failover, check correctness"

variable "raft_multiplier" {
  type    = number
  default = 1
}

cluster "main" {
  store = "consul"
  nodes = 3
  consul {
    raft_multiplier = var.raft_multiplier
  }
}

workload "writers" {
  mix         = { put = 0.7, get = 0.3 }
  consistency = "consistent" # the leader confirms it still leads before answering
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
  duration = "20s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "3s"
    restart_after = "10s"
  }
}

phase "recovered" {
  duration = "5s"
  load "writers" {}
}

check "new leader" {
  condition = phase.failover.leader_elected < seconds(5 * var.raft_multiplier)
}

check "writes resume" {
  condition = phase.failover.failover_time < seconds(6 * var.raft_multiplier)
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
