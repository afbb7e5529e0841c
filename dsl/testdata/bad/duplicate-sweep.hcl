# expect: 32:1 Duplicate sweep block | declared at testdata/bad/duplicate-sweep.hcl:26,1-6
# One sweep per scenario.
variable "rtt" {
  default = "1ms"
}

cluster "main" {
  store = "etcd"
}

network {
  default {
    rtt = var.rtt
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

sweep {
  matrix = {
    rtt = ["1ms", "10ms"]
  }
}

sweep {
  matrix = {
    rtt = ["100ms"]
  }
}
