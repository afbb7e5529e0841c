# expect: -var electon_timeout=2s:1:1 Undeclared variable | Did you mean "election_timeout"?
# var: electon_timeout=2s
# -var names a variable the file does not declare.
variable "election_timeout" {
  default = "1s"
}

cluster "main" {
  store = "etcd"
  etcd {
    election_timeout = var.election_timeout
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
