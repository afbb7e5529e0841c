# disk runs a competing writer on the target's data filesystem: blocks of
# block_size, `parallelism` writers, at `rate` bytes per second (or
# "unlimited"), each write followed by fsync unless fsync = false. etcd
# fsyncs its WAL on every commit, so a slow disk is slow writes.
#
# throttle limits the node's own writes instead (cgroup v1 blkio on its data
# directory's device, root only); parallelism = 0 leaves out the contender.
#
#   scenario plan examples/fault-disk.hcl

description = "etcd: write latency under disk contention on the leader"

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "writers" {
  mix        = { put = 1 }
  value_size = "4KiB"
  clients    = 8
}

phase "quiet" {
  duration = "20s"
  load "writers" {}
}

phase "contended" {
  duration = "30s"
  load "writers" {}

  fault "disk" {
    target      = "leader"
    rate        = "100MiB/s"
    block_size  = "1MiB"
    fsync       = true
    parallelism = 2
    at          = "5s"
    duration    = "20s"
  }
}

phase "throttled" {
  duration = "20s"
  load "writers" {}

  fault "disk" {
    target      = "leader"
    throttle    = "1MiB/s"
    parallelism = 0
    at          = "5s"
    duration    = "10s"
  }
}

check "contention costs at most 10x" {
  condition = phase.contended.put.p99 < 10 * phase.quiet.put.p99
}
