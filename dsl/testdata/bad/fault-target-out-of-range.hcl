# expect: 16:18 Fault target out of range | has 3 nodes (n1..n3); there is no node 4
# A three-node cluster has no node 4.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "stop" {
    target = [1, 4]
  }
}
