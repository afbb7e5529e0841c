# expect: 11:16 Value too large for the store | etcd refuses a value of 1MiB: a put request may not exceed max_request_bytes (1.5 MiB unless the cluster's etcd block sets it), key and framing included. Write at most 1023KiB.
cluster "c" {
  store = "etcd"
  etcd {
    max_request_bytes = "1MiB"
  }
}

workload "w" {
  mix        = { put = 1 }
  value_size = "1MiB"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
