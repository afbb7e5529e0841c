# etcd's tuning guide warns that other processes writing to the same disk
# delay etcd's WAL fsyncs, and every put waits for one. This scenario puts
# a competing writer (1 MiB blocks, fsync after each, two in parallel) on the
# filesystem of the leader's data directory and compares put latency with a
# quiet baseline. The summary also shows the fsync latency the contender
# itself saw: it tells how loaded the disk really was.
#
#   scenario run scenarios/etcd-disk-contention.hcl

description = "etcd: put latency with a competing fsync-heavy writer on the leader's disk"

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "writers" {
  mix        = { put = 1 }
  value_size = "4KiB"
  keyspace   = 1000
  clients    = 8
  timeout    = "5s"
}

phase "quiet" {
  duration = "10s"
  load "writers" {}
}

phase "contended" {
  duration = "15s"
  load "writers" {}

  fault "disk" {
    target      = "leader"
    rate        = "unlimited"
    block_size  = "1MiB"
    fsync       = true
    parallelism = 2
    at          = "2s"
    duration    = "12s"
  }
}

# The other way to starve etcd of disk: limit the leader's own writes (its
# WAL and snapshots) to 512 KiB/s with a cgroup v1 blkio throttle on its data
# directory's device. Needs root. The summary reports what was written
# through the throttle, and says so when the kernel did not charge etcd's
# writes to it (then the throttle had no effect).
phase "throttled" {
  duration = "10s"
  load "writers" {}

  fault "disk" {
    target      = "leader"
    throttle    = "512KiB/s"
    parallelism = 0 # no competing writer, only the throttle
    at          = "2s"
    duration    = "6s"
  }
}

check "still available" {
  condition = phase.contended.availability >= 0.99
  message   = "contention slows etcd down; it should not make it fail requests"
}

check "no acknowledged write lost" {
  condition = run.lost_writes == 0
}

check "linearizable" {
  condition = run.linearizable
}
