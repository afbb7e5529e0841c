# expect: 9:16 Invalid size for "value_size" | "1KB2" has an unknown size unit "KB2"
# "1KB2" is not a size.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix        = { put = 1 }
  value_size = "1KB2"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
