# expect: 17:42 Region used but not placed | No node or workload sits in region "ap-south"
# A partition group naming a region where nothing sits.
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
}

workload "w" {
  region = "us-east"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "partition" {
    groups   = [["us-east"], ["eu-west", "ap-south"]]
    duration = "5s"
  }
}
