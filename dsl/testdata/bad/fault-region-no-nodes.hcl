# expect: 29:14 No nodes in region | No node of cluster "main" sits in region "ap-south"
# Clients sit in ap-south, but no node does: nothing there to kill.
cluster "main" {
  store     = "etcd"
  placement = ["us-east", "eu-west", "eu-west"]
}

workload "w" {
  region = "us-east"
  mix    = { put = 1 }
}

workload "far" {
  region = "ap-south"
  mix    = { get = 1 }
}

network {
  link "us-east" "ap-south" {
    rtt = "190ms"
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
  load "far" {}
  fault "kill" {
    region = "ap-south"
  }
}
