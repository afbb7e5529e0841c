# expect: 14:9 Unknown fault kind | Did you mean "kill"?
# "kil" is not a fault kind.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kil" {
    target = "leader"
  }
}
