# expect: 14:3 Missing fault target | Say which node is to lead: `target = 2` for node n2
# A transfer says which node is to lead.
cluster "main" {
  store = "consul"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
  fault "transfer_leader" {
    at = "1s"
  }
}
