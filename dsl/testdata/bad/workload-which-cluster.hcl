# expect: 11:1 Which cluster? | say which one this workload uses
# Two clusters: each workload must say which one it uses.
cluster "a" {
  store = "etcd"
}

cluster "b" {
  store = "zookeeper"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
