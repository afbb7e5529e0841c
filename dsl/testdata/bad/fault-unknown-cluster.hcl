# expect: 21:22 Unknown cluster | No cluster is named "c"
# expect: 24:3 Which cluster? | say which one this fault uses
# The fault names a cluster that does not exist.
cluster "a" {
  store = "etcd"
}

cluster "b" {
  store = "etcd"
}

workload "w" {
  cluster = cluster.a
  mix     = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    cluster = cluster.c
    target  = "leader"
  }
  fault "pause" {
    target   = "leader"
    duration = "1s"
  }
}
