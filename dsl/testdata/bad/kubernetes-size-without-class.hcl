# expect: 6:5 Storage size without a storage class | Set storage_class, or remove storage_size
# A size for a claim nobody asks for.
cluster "main" {
  store    = "etcd"
  kubernetes {
    storage_size = "10Gi"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
