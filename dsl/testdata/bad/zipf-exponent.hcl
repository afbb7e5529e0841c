# expect: 10:18 Invalid zipf_s | must be greater than 1
# A zipfian exponent must be above 1.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix          = { get = 1 }
  distribution = "zipfian"
  zipf_s       = 0.8
}

phase "p" {
  duration = "10s"
  load "w" {}
}
