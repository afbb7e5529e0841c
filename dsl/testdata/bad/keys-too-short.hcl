# expect: 9:14 Keys too short for the keyspace | key_size must be at least 23
# An explicit key_size too small for prefix plus index.
cluster "main" {
  store = "etcd"
}

workload "writers" {
  mix      = { put = 1 }
  key_size = 8
  keyspace = 100000
}

phase "p" {
  duration = "10s"
  load "writers" {}
}
