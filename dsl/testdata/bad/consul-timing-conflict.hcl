# expect: 8:28 Conflicting Consul raft timing | leader_lease_timeout 2s means raft_multiplier 4, but heartbeat_timeout means 1: Consul scales heartbeat (1s), election (1s) and leader lease (500ms) by one multiplier.
# Consul derives every raft timeout from one raft_multiplier, so a lease
# longer than the heartbeat timeout (which raft refuses) cannot be asked for.
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
