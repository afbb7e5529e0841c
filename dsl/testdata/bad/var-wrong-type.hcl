# expect: -var nodes=many:1:7 Invalid value for variable | variable "nodes" is number, and "many" is not a literal
# var: nodes=many
# -var nodes=many for a number variable.
variable "nodes" {
  type    = number
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
