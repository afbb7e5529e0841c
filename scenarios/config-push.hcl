# Configuration pushed through etcd, ZooKeeper and Consul, one sweep point
# per store: a writer updates 50 configuration keys 40 times a second while
# 20 consumers watch them with each store's own recipe (an etcd prefix
# watch, ZooKeeper data watches set again after each firing with a child
# watch for new keys, Consul blocking queries on the prefix). Then the
# leader is killed while they watch.
#
#   scenario run scenarios/config-push.hcl
#   scenario run scenarios/config-push.hcl --var store=zookeeper   # one store
#
# Printed per store: how soon a consumer is told of a new value, from the
# write's send (notify) and from its acknowledgement (notify's raw
# latency), and how soon every consumer holds it or a newer one (fanout);
# then the watch checker's verdict against every write. An etcd watch owes
# every value, in revision order, once; a ZooKeeper or Consul consumer may
# skip a value a newer one replaced, which is counted, not failed.

description = "Configuration pushed through watches on etcd, ZooKeeper and Consul: notification latency, fan-out, watch guarantees across a leader kill"

variable "store" {
  type    = string
  default = "etcd"
}

sweep {
  matrix = { store = ["etcd", "zookeeper", "consul"] }
}

cluster "main" {
  store = var.store
  nodes = 3
}

workload "config" {
  mix        = { put = 1 }
  keyspace   = 50
  value_size = 512
  clients    = 4
  watchers   = 20
  timeout    = "5s"
}

phase "steady" {
  duration = "20s"
  load "config" {
    rate = 40
  }
}

phase "leader-kill" {
  duration = "25s"
  load "config" {
    rate = 40
  }

  fault "kill" {
    target        = "leader"
    at            = "5s"
    restart_after = "5s"
  }
}

check "consumers are told quickly" {
  condition = phase.steady.notify.p99 < ms(250)
}

check "every consumer holds a write soon" {
  condition = phase.steady.fanout.p99 < ms(500)
}

check "watch guarantees hold" {
  condition = run.workload.config.watch_ok
}

check "no acknowledged write lost" {
  condition = run.lost_writes == 0
}
