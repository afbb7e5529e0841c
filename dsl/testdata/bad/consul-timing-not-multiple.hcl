# expect: 6:24 Consul cannot run this raft timing | Consul scales its election_timeout only through raft_multiplier: it is a multiple of 1s from 1s to 10s; got 1.5s.
# Consul's raft timeouts are raft_multiplier x 1s: 1.5s cannot be had.
cluster "c" {
  store = "consul"
  consul {
    election_timeout = "1500ms"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
