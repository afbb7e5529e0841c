# expect: 7:18 sync_limit above init_limit | sync_limit above init_limit is almost always a mistake
# sync_limit above init_limit is almost always a mistake.
cluster "zk" {
  store = "zookeeper"
  zookeeper {
    init_limit = 5
    sync_limit = 10
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
