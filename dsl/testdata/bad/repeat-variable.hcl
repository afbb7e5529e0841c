# expect: 8:10 Invalid value for "repeat" | use scenario run --repeat N
# repeat is read before variables.
variable "n" {
  type    = number
  default = 3
}

repeat = var.n

cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "1s"
  load "w" {}
}
