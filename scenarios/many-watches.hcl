# The ZooKeeper watch-manager case, on ZooKeeper and etcd: a fleet of
# clients holds a watch on each of 100,000 keys of its own while a writer
# writes elsewhere, then the leader is killed. Each store point runs with
# and without the watches, so that the members' memory (in the report and
# results.json resources), the write latency beside them, and the failover
# time can be read side by side. A ZooKeeper client that reconnects sets
# every one of its watches again on its new server; etcd's client resumes
# each watch stream on another member.
#
# Consul is not in the sweep: its watch is a blocking query, an HTTP
# request held open, and a server takes 200 of them per client address.
#
#   scenario run scenarios/many-watches.hcl
#   scenario run scenarios/many-watches.hcl --var store=zookeeper --var watch_keys=100000

description = "100,000 watches on as many keys: server memory, write latency and leader failover with and without them"

variable "store" {
  type    = string
  default = "etcd"
}

variable "watch_keys" {
  type    = number
  default = 100000
}

sweep {
  matrix = { store = ["etcd", "zookeeper"], watch_keys = [0, 100000] }
}

cluster "main" {
  store = var.store
  nodes = 3
}

# Watches are set 64 at a time: over 4 sessions on ZooKeeper, over 64 watch
# streams on 4 connections on etcd.
workload "fleet" {
  clients = 64
  conns   = 4
  watches {
    keys = var.watch_keys
  }
}

workload "writer" {
  mix      = { put = 1 }
  clients  = 4
  keyspace = 1000
  timeout  = "2s"
}

# etcd sets about 900 watches a second here (ZooKeeper 2,900): the
# watches must all be held before the steady phase starts.
phase "set" {
  duration = "150s"
  load "fleet" {}
  load "writer" {}
}

phase "steady" {
  duration = "20s"
  load "fleet" {}
  load "writer" {}
}

phase "failover" {
  duration = "30s"
  load "fleet" {}
  load "writer" {}

  fault "kill" {
    target        = "leader"
    at            = "5s"
    restart_after = "10s"
  }
}

check "every watch held" {
  condition = run.workload.fleet.watches_held == var.watch_keys
}

# The store's own count: etcd's watcher gauge and ZooKeeper's zk_watch_count,
# summed over the members, against the watches the workload set.
check "the store holds every watch" {
  condition = phase.steady.server.watchers.total >= var.watch_keys
}

# fsync with and without the watches: etcd's a histogram (p99), ZooKeeper's
# a sum and count (mean); the side-by-side table shows both.
check "fsync unaffected" {
  condition = phase.steady.server.fsync.mean < ms(20)
}

check "writes recover within ten seconds of the leader's death" {
  condition = phase.failover.failover_time < seconds(10)
}
