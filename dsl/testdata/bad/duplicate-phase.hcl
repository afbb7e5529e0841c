# expect: 16:1 Duplicate phase "p" | already defined at testdata/bad/duplicate-phase.hcl:11,1-10
# Two phases with one name.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}

phase "p" {
  duration = "20s"
  load "w" {}
}
