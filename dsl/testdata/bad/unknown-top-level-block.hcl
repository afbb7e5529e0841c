# expect: 7:1 Unsupported block type | Did you mean "workload"?
# A typo in a top-level block type.
cluster "main" {
  store = "etcd"
}

workloads "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
}
