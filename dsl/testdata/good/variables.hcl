# Typed variables feed attributes of every kind.
variable "nodes" {
  type    = number
  default = 3
}

variable "preload" {
  type    = bool
  default = false
}

variable "store" {
  type    = string
  default = "etcd"
}

variable "phase_length" {
  default = "20s"
}

cluster "main" {
  store = var.store
  nodes = var.nodes
}

workload "w" {
  mix     = { put = 1, get = 1 }
  preload = var.preload
}

phase "p" {
  duration = var.phase_length
  load "w" {}
}
