# A sweep runs the scenario once per point of its matrix: here every pair of
# heartbeat interval and election timeout, against a 50ms RTT between
# regions. The last dimension varies fastest.
#
# Some pairs are refused by etcd (an election timeout below 5 heartbeats):
# skip_invalid leaves those points out instead of failing the whole sweep.
# Pin a dimension with -var to run a slice:
#
#   scenario plan examples/sweep-timeouts.hcl
#   scenario run  examples/sweep-timeouts.hcl -var heartbeat=100ms

description = "etcd: heartbeat x election timeout against a 50ms RTT, leader killed"

variable "heartbeat" {
  type    = string
  default = "100ms"
}

variable "election" {
  type    = string
  default = "1s"
}

cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["a", "b", "c"]

  etcd {
    heartbeat_interval = var.heartbeat
    election_timeout   = var.election
  }
}

network {
  default {
    rtt = "50ms" # every pair of regions
  }
}

workload "writers" {
  region  = "a"
  mix     = { put = 1 }
  clients = 10
  timeout = "5s"
}

phase "steady" {
  duration = "20s"
  load "writers" {}
}

phase "failover" {
  duration = "30s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "5s"
    restart_after = "10s"
  }
}

sweep {
  matrix = {
    heartbeat = ["50ms", "100ms", "300ms"]
    election  = ["500ms", "1s", "2s"]
  }
  skip_invalid = true # 300ms x 500ms and 300ms x 1s are refused by etcd
}

# Variables can be used in checks: the failover budget follows the election
# timeout of each point.
check "failover within two election timeouts" {
  condition = phase.failover.failover_time < 2 * duration(var.election) + ms(500)
}
