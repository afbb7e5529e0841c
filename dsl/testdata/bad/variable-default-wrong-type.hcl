# expect: 5:13 Invalid default value | does not match its type number
# The default does not match the declared type.
variable "nodes" {
  type    = number
  default = "three"
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
