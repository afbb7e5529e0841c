# expect: 14:3 Network fault changes nothing | Set at least one of rtt, jitter, loss or bandwidth
# A network fault with no effect.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "network" {
    duration = "10s"
  }
}
