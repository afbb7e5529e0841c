# expect: 4:11 Invalid value for "store" | "etcd3" is not a valid store. Did you mean "etcd"?
# A store we do not support.
cluster "main" {
  store = "etcd3"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
