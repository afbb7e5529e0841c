# expect: 17:21 Fault runs past its phase's end | Shorten restart_after to at most 5s
# The killed node would come back after its phase ended.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "kill" {
    target        = "follower"
    at            = "25s"
    restart_after = "10s"
  }
}
