# expect: 10:21 Invalid storage class | is not a Kubernetes object name
# expect: 11:21 Invalid storage size | write a size such as "10Gi"
# expect: 12:21 Invalid region label | is not a Kubernetes label key
# expect: 13:21 Invalid region mapping | not a Kubernetes label value
# Names the API server would refuse, found before anything starts.
cluster "main" {
  store    = "etcd"
  provider = "kubernetes"
  kubernetes {
    storage_class = "Fast SSD"
    storage_size  = "ten gigs"
    region_label  = "zone/with/two/slashes"
    regions       = { local = "not a value!" }
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
