# expect: 6:5 Unsupported argument | Did you mean "heartbeat_interval"?
# "heartbeat" is not an etcd knob; "heartbeat_interval" is.
cluster "main" {
  store = "etcd"
  etcd {
    heartbeat = "100ms"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
