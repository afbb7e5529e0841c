# expect: 8:22 Unknown operation in mix | "gett" is not an operation. Did you mean "get"?
# "gett" is not an operation.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 0.5, gett = 0.5 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
