# expect: 29:5 Both count and fraction | not both
# expect: 31:3 Missing workload | `workload = "services"`
# expect: 33:16 Invalid fraction | above 0 and at most 1
# A vanish fault names a registry workload.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "kv" {
  mix = { put = 1 }
}

workload "svc" {
  registry {
    instances = 10
    ttl       = "5s"
  }
}

phase "p" {
  duration = "30s"
  load "kv" {}
  load "svc" {}
  fault "vanish" {
    name     = "two"
    workload = "svx"
    count    = 2
    fraction = 0.5
  }
  fault "vanish" {
    name     = "three"
    fraction = 2
  }
}
