# heartbeat x election where some pairs are refused by etcd: skip_invalid
# leaves them out and the rest still compile.
variable "heartbeat" {
  default = "100ms"
}

variable "election" {
  default = "1s"
}

cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = var.heartbeat
    election_timeout   = var.election
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

check "failover" {
  condition = phase.p.failover_time < 3 * duration(var.election)
}

sweep {
  matrix = {
    heartbeat = ["100ms", "400ms"]
    election  = ["1s", "3s"]
  }
  skip_invalid = true
}
