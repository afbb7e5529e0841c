# expect: 17:28 Region used but not placed | region "eu-wets". Did you mean "eu-west"?
# A network fault between a placed region and an unplaced one.
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
  fault "network" {
    between  = ["us-east", "eu-wets"]
    rtt      = "300ms"
    duration = "5s"
  }
}
