# How many instances does a store hold at a 2 s heartbeat with its
# keepalive p99 under 100 ms? A sweep over the registry's size answers it:
# the largest point whose checks pass is the capacity on this machine
# (each point on a fresh cluster). Server memory per instance is in the
# summary and results.json (registries[].memory_per_instance_kib).
#
#   scenario run scenarios/registry-capacity.hcl                      # etcd
#   scenario run scenarios/registry-capacity.hcl --var store=consul
#
# ZooKeeper gives every instance a session and a connection of its own, and
# refuses more than 60 connections per client address per server by
# default: for it, copy this file, add `zookeeper { max_client_cnxns =
# 5000 }` to the cluster and sweep the same sizes.

description = "Registry capacity: the most instances at a 2 s heartbeat with keepalive p99 under 100 ms"

variable "store" {
  type    = string
  default = "etcd"
}

variable "instances" {
  type    = number
  default = 250
}

sweep {
  matrix = { instances = [250, 1000, 4000] }
}

cluster "main" {
  store = var.store
  nodes = 3
}

workload "registry" {
  clients    = 32
  value_size = 128
  timeout    = "5s"
  registry {
    instances = var.instances
    ttl       = "10s"
    heartbeat = "2s"
    watchers  = 2
  }
}

phase "register" {
  duration = "20s"
  load "registry" {}
}

phase "steady" {
  duration = "30s"
  load "registry" {}
}

check "every instance registered" {
  condition = run.workload.registry.registered == var.instances && run.workload.registry.expired == 0
}

check "keepalive p99 under 100 ms" {
  condition = phase.steady.keepalive.p99 < 100 && phase.steady.keepalive.error_rate == 0
}
