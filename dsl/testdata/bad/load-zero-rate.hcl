# expect: 14:12 Zero rate | A rate of zero sends nothing
# A rate of zero sends nothing.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {
    rate = 0
  }
}
