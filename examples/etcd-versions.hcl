# The same smoke load on etcd 3.5 and 3.6, one sweep point each: a version
# comparison is one scenario. Each version is built from its Go module on
# first use and cached side by side (`scenario stores install etcd@3.6.16`).
#
#   scenario run examples/etcd-versions.hcl
#   scenario run examples/etcd-versions.hcl --var version=3.6.16   # one point

description = "etcd 3.5 against 3.6: the same load on each"

variable "version" {
  type    = string
  default = "3.5.17"
}

sweep {
  matrix = { version = ["3.5.17", "3.6.16"] }
}

cluster "main" {
  store   = "etcd"
  nodes   = 3
  version = var.version
}

# Closed loop: each of the 10 clients sends its next request as soon as the
# last one returned, so throughput is whatever the cluster gives.
workload "kv" {
  mix         = { put = 0.5, get = 0.5 } # weights, normalised to sum to 1
  consistency = "linearizable"           # etcd reads: linearizable | serializable
  key_size    = 32
  value_size  = 256
  keyspace    = 1000 # the keys are written once before the first phase (preload)
  clients     = 10
}

# Clients join one by one, so the cluster is not hit cold by all of them.
phase "warmup" {
  duration = "5s"
  load "kv" {
    clients = ramp(1, 10)
  }
}

# The measured phase: a load with no attributes runs the workload's clients.
phase "steady" {
  duration = "15s"
  load "kv" {}
}

# Checks read metrics by phase. Latencies are in milliseconds; ms() and
# seconds() say so explicitly. Availability is successes / attempts.
check "available" {
  condition = phase.steady.availability >= 0.99
}

check "put latency" {
  condition = phase.steady.put.p99 < ms(500)
  message   = "a 3-node cluster on loopback should commit a put in well under half a second"
}
