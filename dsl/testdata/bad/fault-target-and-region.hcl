# expect: 18:5 Both target and region | not both
# Nodes are chosen by target or by region, not both.
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
  fault "kill" {
    target = "leader"
    region = "eu-west"
  }
}
