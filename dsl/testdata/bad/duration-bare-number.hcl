# expect: 9:13 Invalid duration for "timeout" | write "500ms" rather than a bare number
# A bare number is not a duration either.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix     = { put = 1 }
  timeout = 500
}

phase "p" {
  duration = "10s"
  load "w" {}
}
