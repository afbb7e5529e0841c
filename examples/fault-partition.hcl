# Partitions cut traffic between groups of hosts. A group member is a region
# (its nodes and the clients sitting there) or a node number.
#
#   groups = [["east"], ["west"]]   cut east from west
#   target = "leader"               isolate the leader from everything else
#   direction = "to" | "from"       cut one way only (relative to the first
#                                   group, or the target); default "both"
#
#   scenario plan examples/fault-partition.hcl

description = "5-node etcd: isolate the leader, then split the regions"

cluster "main" {
  store     = "etcd"
  nodes     = 5
  placement = ["east", "east", "east", "west", "west"]
}

network {
  link "east" "west" {
    rtt = "30ms"
  }
}

workload "writers" {
  region  = "east"
  mix     = { put = 0.9, get = 0.1 }
  clients = 20
  timeout = "2s"
}

phase "steady" {
  duration = "20s"
  load "writers" {}
}

phase "isolated-leader" {
  duration = "30s"
  load "writers" {}

  # The old leader is cut off; the other four elect a new one.
  fault "partition" {
    target   = "leader"
    at       = "5s"
    duration = "10s"
  }
}

phase "split" {
  duration = "30s"
  load "writers" {}

  # East keeps a majority (3 of 5) and its clients: writes continue.
  fault "partition" {
    groups   = [["east"], ["west"]]
    at       = "5s"
    duration = "15s"
  }

  # One-way: node 5 can send but receives nothing.
  fault "partition" {
    name      = "deaf-n5"
    groups    = [[5], [1, 2, 3, 4]]
    direction = "to"
    at        = "22s"
    duration  = "5s"
  }
}

check "leader isolation heals fast" {
  condition = phase.isolated-leader.failover_time < seconds(5)
}

check "majority side keeps writing" {
  condition = phase.split.availability >= 0.95
}
