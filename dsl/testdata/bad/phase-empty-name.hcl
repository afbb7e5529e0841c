# expect: 11:7 Invalid phase name | "" is not
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

# A phase is read in checks as phase.NAME: it needs a name.
phase "" {
  duration = "10s"
  load "w" {}
}
