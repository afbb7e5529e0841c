# expect: 13:3 Attribute not for a registry | takes no "mix"
# expect: 14:3 Attribute not for a registry | takes no "keyspace"
# expect: 18:17 Heartbeat not shorter than the TTL | such as "1.666s"
# expect: 19:17 Invalid churn | between 0 and 10000
# A registry's load and attributes are its own; its heartbeat comes
# before its TTL.
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "svc" {
  mix      = { put = 1 }
  keyspace = 100
  registry {
    instances = 10
    ttl       = "5s"
    heartbeat = "5s"
    churn     = -1
  }
}

phase "p" {
  duration = "10s"
  load "svc" {
    clients = 5
  }
}
