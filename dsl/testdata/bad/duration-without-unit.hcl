# expect: 12:14 Invalid duration for "duration" | duration "5" has no unit; write "5ms" or "5s"
# "5" has no unit: five what?
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "5"
  load "w" {}
}
