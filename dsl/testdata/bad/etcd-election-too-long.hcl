# expect: 6:24 Election timeout too long | above 50s; got 1m0s
# etcd refuses an election timeout above 50s.
cluster "main" {
  store = "etcd"
  etcd {
    election_timeout = "60s"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
