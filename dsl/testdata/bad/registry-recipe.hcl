# expect: 12:17 Unknown registry recipe | etcd has no registry recipe "service"
# etcd's registry is its lease recipe; "service" is Consul's.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "svc" {
  registry {
    instances = 10
    ttl       = "5s"
    recipe    = "service"
  }
}

phase "p" {
  duration = "10s"
  load "svc" {}
}
