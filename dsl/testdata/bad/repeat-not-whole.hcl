# expect: 3:10 Invalid value for "repeat" | "repeat" must be a whole number. repeat is how many times
# Half a repetition.
repeat = 2.5

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
