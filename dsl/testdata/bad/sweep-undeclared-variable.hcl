# expect: 26:5 Sweep over an undeclared variable | "election" is not a declared variable
# The sweep names a variable nobody declared.
variable "heartbeat" {
  default = "100ms"
}

cluster "main" {
  store = "etcd"
  etcd {
    heartbeat_interval = var.heartbeat
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

sweep {
  matrix = {
    heartbeat = ["50ms", "100ms"]
    election  = ["1s", "2s"]
  }
}
