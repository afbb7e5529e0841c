# expect: 8:1 Clients need a region | spans regions "us-east", "eu-west"
# The cluster spans two regions: where do the clients sit?
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
