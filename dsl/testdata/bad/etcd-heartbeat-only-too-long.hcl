# expect: 6:26 Election timeout too short for the heartbeat | (1s, the default) below 5 x heartbeat_interval (300ms)
# Only the heartbeat is set: the default election timeout (1s) is then too short.
cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = "300ms"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
