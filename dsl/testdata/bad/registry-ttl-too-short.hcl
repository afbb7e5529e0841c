# expect: 11:17 TTL too short for the store | Write a ttl of at least "10s"
# Consul's sessions take a TTL of 10 s at least.
cluster "main" {
  store = "consul"
  nodes = 3
}

workload "svc" {
  registry {
    instances = 10
    ttl       = "5s"
  }
}

phase "p" {
  duration = "10s"
  load "svc" {}
}
