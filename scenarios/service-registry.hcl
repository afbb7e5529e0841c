# A service registry on etcd, ZooKeeper and Consul, one sweep point per
# store, each on a cluster of its own. Instances register under a lease
# (etcd), a session with an ephemeral node (ZooKeeper) or a session holding
# a key (Consul), heartbeat it, and churn; consumers watch the list with
# each store's own recipe: an etcd watch, ZooKeeper child watches set again
# after each firing, Consul blocking queries. Then a tenth of the instances
# vanish without a word, and the leader is killed while the registry lives.
#
#   scenario run scenarios/service-registry.hcl
#   scenario run scenarios/service-registry.hcl --var store=consul   # one store
#
# Printed per store: registrations a second, keepalive and notification
# percentiles, and how long after an instance went silent its consumers
# were told it was gone (detect), against the TTL. Consul's sessions take
# at least a 10 s TTL, and Consul may wait up to twice it before it
# invalidates one; etcd revokes expired leases in a sweep every 500 ms;
# ZooKeeper expires sessions on tick boundaries.

description = "A service registry on etcd, ZooKeeper and Consul: registration, heartbeats, watches, failure detection"

variable "store" {
  type    = string
  default = "etcd"
}

# Consul's second recipe: `--var store=consul --var recipe=service` registers
# services with a TTL check instead of session-held keys ("" is each store's
# default recipe).
variable "recipe" {
  type    = string
  default = ""
}

variable "ttl" {
  type    = string
  default = "10s"
}

sweep {
  matrix = { store = ["etcd", "zookeeper", "consul"] }
}

cluster "main" {
  store = var.store
  nodes = 3
}

# 100 instances and 10 watchers keep ZooKeeper's connections per client
# address under its default limit of 60 per server.
workload "registry" {
  value_size = 128
  clients    = 16 # registrations in flight at once
  timeout    = "5s"

  registry {
    instances = 100
    ttl       = var.ttl
    heartbeat = "3s"
    watchers  = 10
    churn     = 2
    recipe    = var.recipe
  }
}

phase "register" {
  duration = "10s"
  load "registry" {}
}

phase "steady" {
  duration = "20s"
  load "registry" {}
}

phase "vanish" {
  duration = "35s"
  load "registry" {}

  fault "vanish" {
    workload = "registry"
    count    = 10
    at       = "2s"
    duration = "30s"
  }
}

phase "leader-kill" {
  duration = "25s"
  load "registry" {}

  fault "kill" {
    target        = "leader"
    at            = "5s"
    restart_after = "5s"
  }
}

check "instances register" {
  condition = run.workload.registry.registrations_per_s > 20
}

check "heartbeats are quick" {
  condition = phase.steady.keepalive.p99 < seconds(1) && phase.steady.keepalive.error_rate == 0
}

check "consumers are told within a second" {
  condition = phase.steady.notify.p99 < seconds(1)
}

check "every vanished instance detected" {
  condition = run.workload.registry.detected == run.workload.registry.vanished
}

check "detection within twice the TTL" {
  condition = phase.vanish.detect.max < 2 * duration(var.ttl) + seconds(5)
}

check "watch guarantees hold" {
  condition = run.watch_ok
}
