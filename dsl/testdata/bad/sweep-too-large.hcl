# expect: 26:12 Sweep too large | The matrix has 2500 points; at most 1000
# 50 x 50 points is more than a sweep may have.
variable "a" {
  default = 0
}

variable "b" {
  default = 0
}

cluster "main" {
  store = "etcd"
}

workload "w" {
  mix  = { put = 1 }
  seed = var.a + var.b + 1
}

phase "p" {
  duration = "10s"
  load "w" {}
}

sweep {
  matrix = {
    a = range(50)
    b = range(50)
  }
}
