# expect: 18:28 Node on both sides of a partition | n1 is in group 1 as region "east"
cluster "main" {
  store     = "etcd"
  nodes     = 5
  placement = ["east", "east", "west", "west", "west"]
}

workload "w" {
  region = "east"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "partition" {
    # n1 sits in east: it cannot also be on the other side.
    groups   = [["east"], [1, 4]]
    at       = "2s"
    duration = "2s"
  }
}
