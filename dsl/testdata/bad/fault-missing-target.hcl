# expect: 14:3 Missing fault target | Say which nodes the pause fault acts on
# Which node should be paused?
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
    at       = "2s"
    duration = "3s"
  }
}
