# expect: 14:1 Duplicate network block | already declared at testdata/bad/duplicate-network.hcl:8,1-8
# One network block per scenario.
cluster "main" {
  store     = "etcd"
  placement = ["a", "b", "b"]
}

network {
  link "a" "b" {
    rtt = "10ms"
  }
}

network {
  default {
    rtt = "1ms"
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
