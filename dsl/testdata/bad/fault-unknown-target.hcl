# expect: 15:14 Unknown target | Did you mean "leader"?
# "leaders" is not a target keyword.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target = "leaders"
  }
}
