# vanish silences instances of a registry workload: they stop heartbeating
# and close nothing, as a crashed or frozen process does, and the store
# must notice on its own, a TTL after their last heartbeat. When the fault
# ends they register again, as restarted processes would. Say how many with
# `count` or `fraction` (of those registered); the default is one.
#
# Each store's recipe: an etcd lease (its key goes when the lease expires),
# a ZooKeeper session holding an ephemeral node, a Consul session holding a
# key (Consul takes TTLs of 10 s and more, and may wait up to twice the TTL).
#
#   scenario run examples/fault-vanish.hcl

description = "etcd: a fifth of a registry's instances vanish; how soon do their watchers know?"

cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "services" {
  registry {
    instances = 50
    ttl       = "5s"
    heartbeat = "1s"
    watchers  = 5
  }
}

phase "steady" {
  duration = "10s"
  load "services" {}
}

phase "crash" {
  duration = "20s"
  load "services" {}

  fault "vanish" {
    workload = "services"
    fraction = 0.2
    at       = "2s"
    duration = "15s"
  }
}

check "every vanished instance detected" {
  condition = run.workload.services.detected == run.workload.services.vanished
}

check "gone within a TTL and a second of falling silent" {
  condition = phase.crash.detect.max < seconds(6)
}

check "watchers told of every change" {
  condition = run.watch_ok
}
