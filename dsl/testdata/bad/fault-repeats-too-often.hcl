# expect: 16:14 Fault repeats too often | would fire 3600000 times in phase "p"
# A kill every millisecond for an hour: far too many occurrences.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "1h"
  load "w" {}
  fault "kill" {
    target = "random"
    every  = "1ms"
  }
}
