# expect: 16:5 Unsupported argument | An argument named "restart_after" is not expected here
# A pause lasts for `duration`; restart_after belongs to kill, stop and restart.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "pause" {
    target        = "leader"
    restart_after = "2s"
  }
}
