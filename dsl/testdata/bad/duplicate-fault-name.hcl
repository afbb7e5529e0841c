# expect: 18:3 Duplicate fault "chaos" | already defined at testdata/bad/duplicate-fault-name.hcl:14,3-15
# Named faults must have distinct names within a phase.
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    name   = "chaos"
    target = 1
  }
  fault "pause" {
    name   = "chaos"
    target = 2
  }
}
