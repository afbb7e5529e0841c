# expect: 16:14 Fault after its phase ends | this fault starts at 45s
# The phase is over before the fault would start.
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
    target = "leader"
    at     = "45s"
  }
}
