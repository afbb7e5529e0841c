# expect: 23:1 Every sweep point is invalid | skip_invalid left out all 2 points
# skip_invalid, but no point is valid.
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
    heartbeat = ["300ms", "500ms"]
  }
  skip_invalid = true
}
