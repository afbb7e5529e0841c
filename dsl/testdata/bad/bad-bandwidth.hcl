# expect: 10:17 Invalid bandwidth for "bandwidth" | is not a bandwidth; write a rate with a unit
# A bandwidth needs a unit.
cluster "main" {
  store     = "etcd"
  placement = ["a", "a", "b"]
}

network {
  link "a" "b" {
    bandwidth = "100"
  }
}

workload "w" {
  region = "a"
  mix    = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
