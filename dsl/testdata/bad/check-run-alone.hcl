# expect: 17:15 Incomplete metric reference | Name a metric, such as
# "run" is a group of metrics, not a value.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

check "everything" {
  condition = run
}
