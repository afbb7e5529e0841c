# expect: 14:8 Unknown workload | No workload is named "writer". Did you mean "writers"?
# A load of a workload that was never declared.
cluster "main" {
  store = "etcd"
}

workload "writers" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "writers" {}
  load "writer" {}
}
