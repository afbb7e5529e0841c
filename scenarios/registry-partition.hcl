# The clients' region cut off from the cluster for longer than the
# instances' TTL (root: the network fabric). Every instance in that region
# is dropped by the store although it kept heartbeating: a false failure
# detection, counted as `expired`. Each registers again after the heal,
# and its watchers, cut off too, catch up: etcd's resume from their last
# revision, so the watch checker still finds every change told once.
#
#   sudo scenario run scenarios/registry-partition.hcl
#   sudo scenario run scenarios/registry-partition.hcl --var store=zookeeper

description = "A registry whose clients' region is cut off for longer than the TTL"

variable "store" {
  type    = string
  default = "etcd"
}

cluster "main" {
  store     = var.store
  nodes     = 3
  placement = ["dc", "dc", "dc"]
}

network {
  link "apps" "dc" {
    rtt = "2ms"
  }
}

workload "svc" {
  region  = "apps"
  clients = 8
  timeout = "2s"
  registry {
    instances = 20
    ttl       = "4s"
    heartbeat = "1s"
    watchers  = 3
  }
}

phase "steady" {
  duration = "5s"
  load "svc" {}
}

phase "cut" {
  duration = "22s"
  load "svc" {}
  fault "partition" {
    groups   = [["apps"], ["dc"]]
    at       = "2s"
    duration = "10s"
  }
}

check "the store dropped the cut-off instances" {
  condition = run.workload.svc.expired >= 1
}

check "watch promises kept" {
  condition = run.watch_ok
}
