# expect: 9:17 Consistency mode not supported by the store | consul has no "serializable" read mode. Allowed: "default", "consistent", "stale"
# "serializable" is etcd's mode; Consul's stale reads are called "stale".
cluster "main" {
  store = "consul"
}

workload "w" {
  mix         = { get = 1 }
  consistency = "serializable"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
