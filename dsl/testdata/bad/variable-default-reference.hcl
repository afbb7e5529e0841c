# expect: 8:13 Reference in a default | A variable's default is a constant
# A default cannot depend on another variable.
variable "heartbeat" {
  default = "100ms"
}

variable "election" {
  default = var.heartbeat
}

cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
