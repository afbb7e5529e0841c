# expect: 25:3 A registry's load takes no clients or rate | write `load "svc" {}`
# expect: 29:16 Not a registry | has no registry block
# expect: 34:16 Unknown workload | Did you mean "svc"?
# A vanish fault silences a registry's instances; a registry's load takes
# no clients.
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
  load "svc" {
    rate = 10
  }
  fault "vanish" {
    workload = "kv"
    at       = "1s"
  }
  fault "vanish" {
    name     = "two"
    workload = "svx"
  }
}
