# expect: 5:21 Empty region name | Name the region node n2 sits in
# Every node needs a region name.
cluster "main" {
  store     = "etcd"
  placement = ["a", "", "a"]
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
