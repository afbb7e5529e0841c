# expect: 11:5 Unsupported argument | Did you mean "heartbeat_interval"?
# expect: 16:29 Unknown operation in mix | Did you mean "get"?
# expect: 17:16 Invalid size for "value_size" | unknown size unit "KB2"
# expect: 21:14 Invalid duration for "duration" | has no unit
# expect: 23:9 Unknown fault kind | Did you mean "kill"?
# Several independent mistakes, all reported at once, in file order.
cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    heartbeat = "100ms"
  }
}

workload "w" {
  mix        = { put = 0.5, gett = 0.5 }
  value_size = "1KB2"
}

phase "p" {
  duration = "5"
  load "w" {}
  fault "kil" {
    target = "leader"
  }
}
