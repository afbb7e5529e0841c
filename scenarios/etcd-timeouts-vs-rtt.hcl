# The etcd tuning guide's advice as an experiment: set the heartbeat
# interval to about the round trip between members, and the election
# timeout to at least ten times that. Each sweep point sets the election
# timeout to a multiple ("factor") of the RTT, runs a steady phase on a
# network with jitter and a little loss, then kills the leader.
#
# What the points show, side by side (printed at the end, and written to
# comparison.txt and sweep.html):
#
#   - at 1x and 3x RTT a heartbeat's answer comes back too late for the
#     leader's quorum check, and a follower that misses a few heartbeats
#     campaigns while the leader is alive: elections in the steady phase,
#     seconds without a leader, writes failing;
#   - from 10x RTT on, no spurious elections, and failover time grows with
#     the election timeout: followers wait one to two election timeouts
#     without a heartbeat before they campaign.
#
# The checks state the advice: at 10x RTT and above the leader is never
# deposed while alive and a failover takes at most three election timeouts
# and a second. Measured here (2026-11-23), steady phase / failover:
#
#   RTT 20 ms:  1x  8 elections, 95.5% available / 7 elections, 8.1 s to write
#               3x  0 / 255 ms    10x  0 / 501 ms    30x  0 / 817 ms
#   RTT 100 ms: 1x  1 election / no write ever succeeded after the kill
#               3x  0 / 1.04 s    10x  0 / 1.91 s    30x  0 / 5.44 s
#
# So the 1x points fail: their lost-write check or failover cannot be
# answered while the cluster keeps electing, and the run exits 1; that is
# the finding. 3x held up on this network, with less margin. Needs root for
# the network fabric. 8 points, about a minute each.
#
#   scenario run scenarios/etcd-timeouts-vs-rtt.hcl
#   scenario run scenarios/etcd-timeouts-vs-rtt.hcl -var rtt_ms=100 -var factor=1   # one point

description = "etcd: election timeout as a multiple of the RTT, spurious elections against failover time"

variable "rtt_ms" {
  type    = number
  default = 50
}

variable "factor" {
  type    = number
  default = 10
}

variable "loss" {
  type    = number
  default = 1
}

sweep {
  matrix = {
    rtt_ms = [20, 100]
    factor = [1, 3, 10, 30]
  }
}

cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["a", "b", "c"]
  etcd {
    # The heartbeat is the RTT, except that etcd refuses an election timeout
    # below 5 heartbeats: below 5x RTT it is a fifth of the election timeout.
    heartbeat_interval = "${var.factor >= 5 ? var.rtt_ms : var.rtt_ms * var.factor / 5}ms"
    election_timeout   = "${var.rtt_ms * var.factor}ms"
  }
}

network {
  default {
    rtt    = "${var.rtt_ms}ms"
    jitter = "${var.rtt_ms / 2}ms"
    loss   = var.loss
  }
}

# The writers talk to every member, as clientv3 does: with only their local
# member, a kill of that member would measure its restart, not the failover.
workload "writers" {
  region   = "a"
  mix      = { put = 1 }
  keyspace = 500
  clients  = 8
  timeout  = "5s"
}

phase "steady" {
  duration = "30s"
  load "writers" {}
}

phase "failover" {
  duration = "20s"
  load "writers" {}

  fault "kill" {
    target        = "leader"
    at            = "3s"
    restart_after = "10s"
  }
}

check "with election >= 10x RTT the leader is never deposed while alive" {
  condition = var.factor < 10 || phase.steady.elections == 0
}

check "at 10x RTT and above, failover within three election timeouts and a second" {
  condition = var.factor < 10 || phase.failover.failover_time < 3 * var.rtt_ms * var.factor + 1000
}

check "nothing acknowledged is lost" {
  condition = run.lost_writes == 0
}
