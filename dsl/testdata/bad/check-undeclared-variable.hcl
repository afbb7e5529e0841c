# expect: 17:36 Undeclared variable | No variable "budget" is declared
# A check reads var.budget, which is not declared.
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

check "budget" {
  condition = phase.p.put.p99 < ms(var.budget)
}
