# expect: unknown-name.hcl:2:1 Undeclared variable | "heartbeat" is not declared in
# var-file: ../vars/unknown-name.hcl
# The -var-file sets a variable this file does not declare.
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
