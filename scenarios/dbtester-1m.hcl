# The scale of dbtester's etcd write benchmark: a million keys of 256 bytes
# with 1 KiB values written before the load starts, then 10,000 clients on
# 100 connections. It shows what such a run costs this tool (preload time,
# the runner's memory, the cluster's), with figures in the README, "Scale".
#
#   scenario run scenarios/dbtester-1m.hcl
#   scenario run scenarios/dbtester-1m.hcl --var keys=100000 --var clients=1000
#
# The preload alone writes about 1.3 GB of keys and values: etcd's default
# backend quota (2 GiB) would be most of the way full, so it is raised here.

description = "etcd: 1,000,000 preloaded keys (256 B keys, 1 KiB values), then 10,000 clients writing"

variable "keys" {
  type    = number
  default = 1000000
}

variable "clients" {
  type    = number
  default = 10000
}

cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    quota_backend_bytes = "8GiB"
  }
}

workload "dbtester" {
  mix        = { put = 1 }
  preload    = true
  key_size   = 256
  value_size = 1024
  keyspace   = var.keys
  clients    = var.clients
  conns      = 100
  timeout    = "10s"
}

phase "ramp" {
  duration = "10s"
  load "dbtester" { clients = ramp(100, var.clients) }
}

phase "write" {
  duration = "30s"
  load "dbtester" {}
}

check "available" {
  condition = phase.write.availability >= 0.99
}
