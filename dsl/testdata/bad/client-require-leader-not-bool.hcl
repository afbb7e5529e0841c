# expect: 9:22 Invalid value for "require_leader" | "require_leader" must be true or false
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
  client {
    require_leader = "no"
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
