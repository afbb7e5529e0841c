# expect: 10:7 Invalid phase name | "a\nb" is not
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "a\nb" {
  duration = "10s"
  load "w" {}
}
