# expect: 10:14 Jitter larger than the RTT | round trips cannot vary by more than they last
cluster "main" {
  store     = "etcd"
  placement = ["a", "a", "b"]
}

network {
  link "a" "b" {
    rtt    = "1ms"
    jitter = "100ms"
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
