# expect: 11:1 Duplicate workload "w" | already defined at testdata/bad/duplicate-workload.hcl:7,1-13
# Two workloads with one name.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

workload "w" {
  mix = { get = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
