# pause freezes a node (SIGSTOP to its process group) and thaws it after
# `duration`: the process keeps its sockets but answers nothing, like a long
# GC pause or a stalled VM. A paused leader is the classic cause of a stale
# leader serving reads after its lease expired.
#
#   scenario plan examples/fault-pause.hcl

description = "etcd: a paused leader, and repeated short pauses of followers"

cluster "main" {
  store = "etcd"
  nodes = 3

  etcd {
    heartbeat_interval = "100ms"
    election_timeout   = "1s"
  }
}

workload "writers" {
  mix     = { put = 0.5, get = 0.5 }
  clients = 10
  timeout = "3s"
}

phase "paused-leader" {
  duration = "30s"
  load "writers" {}

  # Longer than the election timeout: the others elect a new leader.
  fault "pause" {
    target   = "leader"
    at       = "5s"
    duration = "5s"
  }
}

phase "hiccups" {
  duration = "30s"
  load "writers" {}

  # Shorter than the election timeout: no election, just slow requests.
  fault "pause" {
    target   = "follower"
    duration = "500ms"
    every    = "5s"
  }
}

check "new leader within 3s" {
  condition = phase.paused-leader.leader_elected < seconds(3)
}

check "hiccups elect nobody" {
  condition = phase.hiccups.elections == 0
}
