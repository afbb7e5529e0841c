# expect: 6:15 Placement does not match nodes | 3 nodes but placement lists 2 regions
# Three nodes, two regions.
cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["us-east", "eu-west"]
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
