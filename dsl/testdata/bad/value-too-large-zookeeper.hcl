# expect: 8:16 Value too large for the store | zookeeper refuses a value of 2MiB: a request, path and value together, may not exceed jute.maxbuffer (1 MiB less one byte). Write at most 1000000B.
cluster "c" {
  store = "zookeeper"
}

workload "w" {
  mix        = { put = 1 }
  value_size = "2MiB"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
