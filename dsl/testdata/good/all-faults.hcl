# Every fault kind, with regions, links and every way to name targets.
description = "all fault kinds"
seed        = 11

cluster "main" {
  store     = "etcd"
  nodes     = 5
  placement = ["east", "east", "west", "west", "south"]
  etcd {
    heartbeat_interval  = "50ms"
    election_timeout    = "500ms"
    snapshot_count      = 5000
    quota_backend_bytes = "2GiB"
    max_request_bytes   = "1.5MiB"
    auto_compaction     = "1h"
  }
}

network {
  default {
    rtt = "2ms"
  }
  link "east" "west" {
    rtt       = "60ms"
    jitter    = "5ms"
    loss      = "0.1%"
    bandwidth = "100mbit"
  }
}

workload "east-clients" {
  region   = "east"
  mix      = { put = 3, get = 1 }
  keyspace = 100
  # The aggressive connection settings a scenario may declare.
  client {
    keepalive_time        = "10s"
    keepalive_timeout     = "3s"
    reconnect_backoff_max = "1s"
    retries               = 0
    require_leader        = true
  }
}

phase "faults" {
  duration = "2m"
  load "east-clients" {}

  fault "network" {
    between = ["east", "west"]
    rtt     = "250ms"
    at      = "1s"
    duration = "10s"
  }
  fault "network" {
    name      = "slow-south"
    region    = "south"
    bandwidth = "1MiB/s"
    at        = "12s"
    duration  = "5s"
  }
  fault "network" {
    name     = "everything"
    loss     = 2
    at       = "20s"
    duration = "3s"
  }
  fault "partition" {
    groups    = [["east", 5], ["west"]]
    direction = "from"
    at        = "25s"
    duration  = "5s"
  }
  fault "partition" {
    name     = "isolate-minority"
    target   = "minority"
    at       = "31s"
    duration = "4s"
  }
  fault "stop" {
    target        = "majority"
    at            = "40s"
    restart_after = "5s"
  }
  fault "kill" {
    region        = "west"
    at            = "50s"
    restart_after = "5s"
  }
  fault "pause" {
    target   = "random"
    seed     = 99
    at       = "60s"
    duration = "1s"
  }
  fault "disk" {
    target      = "all"
    rate        = "unlimited"
    fsync       = false
    parallelism = 4
    at          = "70s"
    duration    = "10s"
  }
  fault "restart" {
    target = [3]
    at     = "90s"
  }
  fault "transfer_leader" {
    target = "follower"
    at     = "100s"
    every  = "5s"
  }
  fault "transfer_leader" {
    name   = "to-south"
    target = 5
    at     = "115s"
  }
  fault "transfer_leader" {
    name   = "to-west"
    region = "west"
    at     = "117s"
  }
}
