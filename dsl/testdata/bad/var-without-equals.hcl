# expect: -var nodes:1:1 Invalid -var option | write -var name=value
# var: nodes
# -var needs name=value.
variable "nodes" {
  default = 3
}

cluster "main" {
  store = "etcd"
  nodes = var.nodes
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
