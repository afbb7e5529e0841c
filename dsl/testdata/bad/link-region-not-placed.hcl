# expect: 12:18 Region used but not placed | No node or workload sits in region "ap-south"
# A link to a region with no node and no clients.
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
}

network {
  link "us-east" "eu-west" {
    rtt = "80ms"
  }
  link "us-east" "ap-south" {
    rtt = "190ms"
  }
}

workload "w" {
  region = "us-east"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
