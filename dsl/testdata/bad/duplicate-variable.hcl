# expect: 7:1 Duplicate variable "rtt" | already defined at testdata/bad/duplicate-variable.hcl:3,1-15
# Two variables with one name.
variable "rtt" {
  default = "10ms"
}

variable "rtt" {
  default = "20ms"
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
