# Network faults change the RTT, jitter, loss or bandwidth of some paths for
# a while, then put back what the network block declared.
#
# Three shapes:
#   between = ["a", "b"]  one link between two regions
#   target / region       every path to and from some nodes
#   neither               every link
#
#   scenario plan examples/fault-network.hcl

description = "etcd across two regions: a slow link, then a lossy leader"

cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["east", "east", "west"]

  etcd {
    heartbeat_interval = "50ms"
    election_timeout   = "1s"
  }
}

network {
  link "east" "west" {
    rtt = "40ms"
  }
}

workload "writers" {
  region = "east"
  mix    = { put = 1 }
}

phase "baseline" {
  duration = "20s"
  load "writers" {
    rate = 200
  }
}

phase "degraded" {
  duration = "40s"
  load "writers" {
    rate = 200
  }

  # The east-west link gets slow and jittery from 5s to 20s into the phase.
  fault "network" {
    name     = "slow-wan"
    between  = ["east", "west"]
    rtt      = "300ms"
    jitter   = "30ms"
    at       = "5s"
    duration = "15s"
  }

  # Then every path of the leader (whichever node leads at 25s) drops 5% of
  # its packets and is held to 10 Mbit/s until the phase ends.
  fault "network" {
    name      = "lossy-leader"
    target    = "leader"
    loss      = 5 # percent; "5%" works too
    bandwidth = "10mbit"
    at        = "25s"
  }
}

# Whether the slow link shows in write latency depends on where the leader
# sits: with the leader in east (n1 or n2) a majority is one local round trip
# away; with n3 leading, every write crosses the slow link. Either way no
# write should fail.
check "writes survive a degraded network" {
  condition = phase.degraded.availability >= 0.99
}
