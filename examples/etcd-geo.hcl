# etcd spread over three regions, with clients in one of them.
#
# Write latency in a geo-distributed raft cluster is set by the network: a put
# is acknowledged once the leader has the entry on a majority, so its latency
# is the clients' RTT to their member, plus that member's RTT to the leader
# (it forwards the put unless it leads), plus the leader's RTT to its nearest
# follower, plus an fsync. The warm-up hands the leadership to n2 in eu-west,
# so that every run measures the same path: 1 ms to n1, 80 ms to the leader,
# 80 ms back to its nearest follower (n1). The steady phase measures that;
# the failover phase kills the leader (n2, not the clients' own member) and
# measures how long writes stop. Needs root: every node and the clients get a
# network namespace, and the links between them go through scenario's
# userspace shaper.
#
#   scenario validate examples/etcd-geo.hcl
#   scenario plan examples/etcd-geo.hcl
#   scenario run examples/etcd-geo.hcl -var election_timeout=2s

description = "3-region etcd: write latency follows the RTT matrix; leader kill and failover"
seed        = 42

# Tuning knobs are variables so they can be set with -var or swept.
variable "heartbeat_interval" {
  type    = string
  default = "100ms" # the tuning guide: about the RTT between members
}

variable "election_timeout" {
  type    = string
  default = "1s" # at least 10x the RTT; etcd refuses less than 5x the heartbeat
}

cluster "main" {
  store     = "etcd"
  version   = "3.5.17"
  nodes     = 3
  placement = ["us-east", "eu-west", "ap-south"] # region of n1, n2, n3

  etcd {
    heartbeat_interval = var.heartbeat_interval
    election_timeout   = var.election_timeout
    snapshot_count     = 10000
  }
}

# RTTs are round trips; each direction gets half. Pairs of regions not
# listed would use a default block; hosts within one region (the clients and
# n1) use the within block, unshaped when there is none.
network {
  within {
    rtt = "1ms"
  }
  link "us-east" "eu-west" {
    rtt    = "80ms"
    jitter = "4ms"
  }
  link "us-east" "ap-south" {
    rtt = "190ms"
  }
  link "eu-west" "ap-south" {
    rtt = "150ms"
  }
}

workload "writers" {
  cluster     = cluster.main
  region      = "us-east" # the clients' host sits here
  mix         = { put = 0.8, get = 0.2 }
  consistency = "linearizable" # or "serializable": read from the local member
  key_size    = 32
  value_size  = "1KiB"
  keyspace    = 1000
  clients     = 100 # open loop: enough clients that none waits at 100 req/s
  conns       = 4
  timeout     = "3s"
  endpoints   = "local" # connect to the member in us-east, which forwards to the leader; "all" spreads over every member
  workers     = 2       # with provider "kubernetes": two load-worker pods share the clients and rate; other providers load from the runner
}

phase "warmup" {
  duration = "10s"
  load "writers" {
    rate = ramp(10, 100) # open loop: requests per second, rising
  }
  # Whichever node won the first election, the eu-west node (n2) leads
  # from here on.
  fault "transfer_leader" {
    region = "eu-west"
    at     = "1s"
  }
}

phase "steady" {
  duration = "30s"
  load "writers" {
    rate = 100
  }
}

phase "failover" {
  duration = "30s"
  load "writers" {
    rate = 100
  }
  fault "kill" {
    target        = "leader" # resolved when the fault fires
    at            = "5s"
    restart_after = "10s"
  }
}

check "steady write p99" {
  condition = phase.steady.put.p99 < ms(1000)
  message   = "a put costs the clients' RTT to the leader plus the leader's RTT to its nearest follower plus an fsync: 1 + 80 + 80 ms here with n2 leading, at most 190 + 150 ms wherever the leader is"
}

check "failover availability" {
  condition = phase.failover.availability >= 0.9 && phase.failover.max_gap < seconds(5)
}

check "failover time" {
  condition = phase.failover.failover_time < seconds(5)
}
