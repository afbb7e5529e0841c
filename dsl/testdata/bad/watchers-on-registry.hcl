# expect: 14:3 Attribute not for a registry | a registry's watchers go in its block
# A registry's watchers are declared in its block, not on the workload.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "svc" {
  registry {
    instances = 10
    ttl       = "5s"
    watchers  = 2
  }
  watchers = 3
}

phase "p" {
  duration = "10s"
  load "svc" {}
}
