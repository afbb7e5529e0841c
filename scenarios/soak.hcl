# The soak of issue 21: examples/etcd-smoke.hcl's cluster and workload held
# at a fixed offered load for an hour, to show that the runner's memory and
# outputs stay bounded while it runs (figures in the README, "Scale").
#
#   scenario run scenarios/soak.hcl                       # one hour at 2,000/s
#   scenario run scenarios/soak.hcl --var duration=5m     # a shorter look
#
# Open loop: requests are sent at `rate` per second whatever the cluster
# does, so the load does not sag when the store slows down, and the late
# start share says when this machine could not keep the pace.

description = "3-node etcd on loopback: put/get 50/50 at a fixed rate for an hour"

variable "duration" {
  type        = string
  default     = "1h"
  description = "How long the load is held."
}

variable "rate" {
  type        = number
  default     = 2000
  description = "Requests per second, put and get together."
}

# etcd keeps every revision until it is compacted: an hour of 1,000 puts/s
# grew the backend to 1.46 GB without it, and the default 2 GiB quota would
# stop a two-hour soak with "database space exceeded". Production clusters
# compact; so does this one.
cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    auto_compaction = "5m"
  }
}

workload "kv" {
  mix         = { put = 0.5, get = 0.5 }
  consistency = "linearizable"
  key_size    = 32
  value_size  = 256
  keyspace    = 1000
  clients     = 200 # open loop: the most requests in flight at once
}

phase "warmup" {
  duration = "10s"
  load "kv" { rate = ramp(100, var.rate) }
}

phase "soak" {
  duration = var.duration
  load "kv" { rate = var.rate }
}

check "available" {
  condition = phase.soak.availability >= 0.999
}

check "on pace" {
  condition = phase.soak.late_start_share < 0.01
  message   = "the runner sent more than 1% of requests over a millisecond late: the offered load was not the declared one"
}

check "linearizable" {
  condition = run.linearizable
}

check "nothing lost" {
  condition = run.lost_writes == 0
}
