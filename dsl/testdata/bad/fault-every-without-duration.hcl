# expect: 16:13 Repeating fault without a duration | needs a `duration` shorter than `every` (10s)
# A repeating windowed fault needs a duration.
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
    rtt   = "100ms"
    every = "10s"
  }
}
