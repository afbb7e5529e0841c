# expect: 9:12 Region used but not placed | No node sits in region "us-west"
# Clients in a region where nothing is.
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
}

workload "w" {
  region = "us-west"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
