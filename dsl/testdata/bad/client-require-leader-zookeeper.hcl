# expect: 9:5 Client setting not supported by the store | zookeeper clients have only "session_timeout"; "require_leader" is not one of them.
cluster "main" {
  store = "zookeeper"
}

workload "w" {
  mix = { put = 1 }
  client {
    require_leader = false
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
