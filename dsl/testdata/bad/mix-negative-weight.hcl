# expect: 8:26 Negative weight in mix | The weight of "get" must be zero or more
# Weights are relative and must not be negative.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1, get = -0.5 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
