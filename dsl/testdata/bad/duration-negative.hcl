# expect: 6:26 Invalid duration for "heartbeat_interval" | must be greater than zero
# A negative duration.
cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = "-100ms"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
