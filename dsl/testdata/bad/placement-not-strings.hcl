# expect: 6:27 Invalid value for "placement element" | must be a string
# A placement element that is not a region name.
cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["us-east", ["eu-west"], "ap-south"]
}

workload "w" {
  region = "us-east"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
