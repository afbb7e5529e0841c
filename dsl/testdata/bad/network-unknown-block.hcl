# expect: 9:3 Unsupported block type | Did you mean "link"?
# "links" is not a network block; "link" is.
cluster "main" {
  store     = "etcd"
  placement = ["a", "b", "b"]
}

network {
  links "a" "b" {
    rtt = "10ms"
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
