# expect: 8:9 Empty mix | positive weight
# Every weight zero: nothing to send.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 0, get = 0 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
