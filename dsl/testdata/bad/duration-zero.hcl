# expect: 12:14 Invalid duration for "duration" | must be greater than zero
# A phase of zero length.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "0s"
  load "w" {}
}
