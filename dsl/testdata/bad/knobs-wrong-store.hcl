# expect: 5:3 Knobs for another store | so zookeeper knobs do not apply here
# ZooKeeper knobs on an etcd cluster.
cluster "main" {
  store = "etcd"
  zookeeper {
    tick_time = "2s"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
