# expect: 14:21 Invalid function argument | a number is required
# ramp() takes numbers.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {
    rate = ramp(0, "lots")
  }
}
