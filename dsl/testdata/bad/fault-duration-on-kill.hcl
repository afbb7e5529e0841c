# expect: 16:5 Unsupported argument | write `restart_after = "10s"`
# A kill is instantaneous: the downtime is restart_after.
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
    target   = "leader"
    duration = "10s"
  }
}
