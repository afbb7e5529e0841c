# expect: 3:1 Missing value for variable | or pass -var election_timeout=VALUE
# No default and no -var.
variable "election_timeout" {
  type = string
}

cluster "main" {
  store = "etcd"
  etcd {
    election_timeout = var.election_timeout
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
