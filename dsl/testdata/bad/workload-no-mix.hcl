# expect: 8:1 Missing mix | a registry block
# A workload sends a mix of operations or runs a registry.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "w" {
  clients = 2
}

phase "p" {
  duration = "10s"
  load "w" {}
}
