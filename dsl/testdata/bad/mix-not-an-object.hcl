# expect: 8:9 Invalid mix | object of weights
# A mix is an object of weights.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = ["put", "get"]
}

phase "p" {
  duration = "10s"
  load "w" {}
}
