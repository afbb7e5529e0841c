# expect: 24:17 Invalid sweep value | Variable "nodes" cannot take "five"
# A sweep value the variable's type refuses.
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

sweep {
  matrix = {
    nodes = [3, "five"]
  }
}
