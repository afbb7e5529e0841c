# expect: 6:10 Invalid workload name | "a.b" is not
cluster "main" {
  store = "etcd"
}

workload "a.b" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "a.b" {}
}
