# expect: 3:24 Number out of range | within
# A number beyond float64's range, here inside a string template.
description = "scale ${1e300000000}"

cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
