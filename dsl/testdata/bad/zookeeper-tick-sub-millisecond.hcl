# expect: 6:17 Invalid tick_time | write "2ms"
# ZooKeeper counts tickTime in whole milliseconds.
cluster "zk" {
  store = "zookeeper"
  zookeeper {
    tick_time = "1500us"
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
