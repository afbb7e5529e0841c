# expect: 4:15 Invalid version | etcd version "3.5": want a release like 3.5.17. Write a full release number such as "3.5.17"
# A version is a whole release number, checked where it is written.
cluster "main" {
  version   = "3.5"
  store     = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
