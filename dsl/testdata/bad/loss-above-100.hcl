# expect: 10:12 Invalid percentage for "loss" | between 0 and 100 (percent), not 150
# Loss is a percentage.
cluster "main" {
  store     = "etcd"
  placement = ["a", "a", "b"]
}

network {
  link "a" "b" {
    loss = 150
  }
}

workload "w" {
  region = "a"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
