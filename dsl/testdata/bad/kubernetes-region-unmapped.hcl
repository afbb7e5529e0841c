# expect: 9:15 Mapping for a region no member is in | regions maps ["ap-south"]
# expect: 9:15 Region without a mapping | add eu-west = "<label value>"
# Members in two regions, a map of one of them and a region nobody is in.
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
  provider  = "kubernetes"
  kubernetes {
    regions = { us-east = "us-east-1", ap-south = "ap-south-1" }
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
