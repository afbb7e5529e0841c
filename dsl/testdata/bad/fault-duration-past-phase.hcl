# expect: 17:16 Fault runs past its phase's end | starts at 20s and lasts 15s. Shorten duration to at most 10s
# The pause would outlast its phase.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "pause" {
    target   = "leader"
    at       = "20s"
    duration = "15s"
  }
}
