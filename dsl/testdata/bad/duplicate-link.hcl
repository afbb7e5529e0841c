# expect: 12:3 Duplicate link "b" "a" | already declared at testdata/bad/duplicate-link.hcl:9,3-15
# (a, b) and (b, a) are the same link.
cluster "main" {
  store     = "etcd"
  placement = ["a", "b", "b"]
}

network {
  link "a" "b" {
    rtt = "10ms"
  }
  link "b" "a" {
    rtt = "20ms"
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
