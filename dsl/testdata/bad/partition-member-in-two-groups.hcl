# expect: 16:26 Member in two groups | n2 is already in a group at testdata/bad/partition-member-in-two-groups.hcl:16,21-22
# Node 2 cannot be on both sides of a partition.
cluster "main" {
  store = "etcd"
  nodes = 5
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "30s"
  load "w" {}
  fault "partition" {
    groups   = [[1, 2], [2, 3, 4, 5]]
    duration = "10s"
  }
}
