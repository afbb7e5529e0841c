# expect: 6:23 Invalid value for "raft_multiplier" | must be between 1 and 10
# raft_multiplier runs from 1 to 10.
cluster "c" {
  store = "consul"
  consul {
    raft_multiplier = 20
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
