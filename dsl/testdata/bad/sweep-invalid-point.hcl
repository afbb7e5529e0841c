# expect: 11:26 Election timeout too short for the heartbeat | (sweep point heartbeat="300ms"; set skip_invalid = true
# heartbeat=300ms with the default 1s election timeout is refused by etcd;
# without skip_invalid the whole sweep is invalid, and the detail names the point.
variable "heartbeat" {
  default = "100ms"
}

cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = var.heartbeat
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

sweep {
  matrix = {
    heartbeat = ["100ms", "300ms"]
  }
}
