# expect: 7:26 Election timeout too short for the heartbeat | set election_timeout to at least 1s
# etcd refuses an election timeout below five heartbeats.
cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = "200ms"
    election_timeout   = "800ms"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
