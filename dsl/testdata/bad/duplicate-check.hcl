# expect: 20:1 Duplicate check "fast" | already defined at testdata/bad/duplicate-check.hcl:16,1-13
# Two checks with one name.
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

check "fast" {
  condition = phase.p.put.p99 < ms(100)
}

check "fast" {
  condition = phase.p.put.p50 < ms(10)
}
