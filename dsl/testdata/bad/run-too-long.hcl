# expect: 17:14 Run too long | The phases up to "more" last 800h0m0s; a run may last at most 720h0m0s
# Phases adding up to more than 30 days.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "soak" {
  duration = "400h"
  load "w" {}
}

phase "more" {
  duration = "400h"
  load "w" {}
}
