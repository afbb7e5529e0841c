# expect: 16:10 Invalid duration for "at" | "at" must not be negative
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target = "leader"
    # 0s is the phase's start; nothing happens before it.
    at = "-2s"
  }
}
