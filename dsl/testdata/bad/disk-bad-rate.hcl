# expect: 16:14 Invalid disk rate | Write bytes per second
# A disk rate is bytes per second.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "disk" {
    target = "leader"
    rate   = "100mbit"
  }
}
