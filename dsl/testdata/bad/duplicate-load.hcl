# expect: 14:3 Duplicate load of workload "w" | already has a load in this phase at testdata/bad/duplicate-load.hcl:13,3-11
# A workload runs once per phase.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  load "w" {
    rate = 100
  }
}
