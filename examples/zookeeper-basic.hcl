# A 3-node ZooKeeper ensemble on loopback with its timing knobs spelled out.
#
# ZooKeeper counts its timeouts in ticks: a follower has init_limit ticks to
# connect and sync with the leader, and may fall sync_limit ticks behind
# before it is dropped. A read is served by whichever server the client is
# connected to ("local"); "sync" issues a sync first, so the read sees every
# write committed before it.
#
#   scenario plan examples/zookeeper-basic.hcl

description = "3-node ZooKeeper: local versus synced reads"

cluster "zk" {
  store   = "zookeeper"
  version = "3.8.0"
  nodes   = 3

  zookeeper {
    tick_time  = "2s" # the unit of every other timeout
    init_limit = 10   # 20s to join
    sync_limit = 5    # 10s behind and a follower is dropped
    jvm_heap   = "512MiB"
  }
}

workload "writers" {
  mix        = { put = 1 }
  value_size = "1KiB"
  clients    = 4
}

workload "local-readers" {
  mix         = { get = 1 }
  consistency = "local" # ZooKeeper's default: fast, possibly stale
  clients     = 8
}

workload "synced-readers" {
  mix         = { get = 1 }
  consistency = "sync" # sync() before every read: up to date, slower
  clients     = 8
}

phase "steady" {
  duration = "30s"
  load "writers" {}
  load "local-readers" {}
  load "synced-readers" {}
}

# The price of a synced read, per workload within the phase.
check "synced reads cost at most 5x" {
  condition = phase.steady.workload.synced-readers.get.p99 < 5 * phase.steady.workload.local-readers.get.p99 + ms(5)
}

check "no errors" {
  condition = phase.steady.errors == 0
}
