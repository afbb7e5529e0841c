# Cut a minority of a 5-node etcd cluster off the rest and check that the
# majority keeps serving, then isolate the leader itself and measure the
# failover. Needs root for the network fabric.
#
#   scenario run scenarios/etcd-partition.hcl

description = "etcd: the majority keeps serving through a minority partition; an isolated leader is replaced"

cluster "main" {
  store     = "etcd"
  nodes     = 5
  placement = ["a", "a", "a", "b", "b"]
}

workload "writers" {
  region      = "a"
  mix         = { put = 0.8, get = 0.2 }
  consistency = "linearizable"
  keyspace    = 500
  clients     = 10
  timeout     = "2s"
}

phase "baseline" {
  duration = "5s"
  load "writers" {}
}

phase "minority-cut" {
  duration = "15s"
  load "writers" {}

  # Region b (2 of 5 nodes) loses contact with region a and its clients.
  fault "partition" {
    groups   = [["a"], ["b"]]
    at       = "3s"
    duration = "8s"
  }
}

phase "leader-isolated" {
  duration = "15s"
  load "writers" {}

  fault "partition" {
    target   = "leader"
    at       = "3s"
    duration = "8s"
  }
}

check "majority keeps serving" {
  condition = phase.minority-cut.max_gap < seconds(2)
}

check "isolated leader replaced" {
  condition = phase.leader-isolated.leader_elected < seconds(5)
}

check "no acknowledged write lost" {
  condition = run.lost_writes == 0
}

check "linearizable" {
  condition = run.linearizable
}
