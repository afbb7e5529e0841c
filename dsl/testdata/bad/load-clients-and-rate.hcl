# expect: 15:5 Both clients and rate | Remove one of them
# A load is closed-loop or open-loop, not both.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {
    clients = 10
    rate    = 500
  }
}
