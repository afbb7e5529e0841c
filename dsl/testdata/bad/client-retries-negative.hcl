# expect: 9:15 Invalid value for "retries" | "retries" must be between 0 and 1000.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
  client {
    retries = -1
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
