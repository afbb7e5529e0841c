# expect: 5:11 Undeclared variable | No variable "nodes" is declared
# var.nodes is used but never declared.
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
