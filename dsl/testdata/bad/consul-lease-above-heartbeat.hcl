# expect: 7:28 Leader lease longer than heartbeat timeout | Raft refuses leader_lease_timeout (2s) above heartbeat_timeout (1s)
# Raft refuses a leader lease longer than the heartbeat timeout.
cluster "c" {
  store = "consul"
  consul {
    heartbeat_timeout    = "1s"
    leader_lease_timeout = "2s"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
