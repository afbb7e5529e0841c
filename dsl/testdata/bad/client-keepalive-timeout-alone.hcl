# expect: 9:5 Keepalive timeout without keepalive | set keepalive_time too
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
  client {
    keepalive_timeout = "3s"
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
