# A 2 x 3 sweep, every point valid.
variable "nodes" {
  type    = number
  default = 3
}

variable "rtt" {
  default = "10ms"
}

cluster "main" {
  store     = "etcd"
  nodes     = var.nodes
}

network {
  default {
    rtt = var.rtt
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
    nodes = [3, 5]
    rtt   = ["1ms", "10ms", "100ms"]
  }
}
