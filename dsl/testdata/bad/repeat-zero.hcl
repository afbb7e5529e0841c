# expect: 5:10 Invalid value for "repeat" | "repeat" must be between 1 and 100. repeat is how many times the scenario runs
# A scenario repeated no times.
description = "repeat must be at least 1"

repeat = 0

cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "1s"
  load "w" {}
}
