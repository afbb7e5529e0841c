# expect: 18:21 Fault runs past its phase's end | starts at 600h0m0s and lasts 2562047h0m0s
# A restart_after so long that start + restart_after would overflow the
# timeline: reported as too long, never wrapped around to a negative time.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "700h"
  load "w" {}
  fault "kill" {
    target        = "leader"
    at            = "600h"
    restart_after = "2562047h"
  }
}
