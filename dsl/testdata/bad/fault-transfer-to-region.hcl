# expect: 18:14 Transfer to one node | Leadership goes to one node: `target = 2` for node n2
# Leadership goes to one node, not to a region's nodes.
cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["east", "west", "west"]
}

workload "w" {
  region = "east"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "transfer_leader" {
    region = "west"
  }
}
