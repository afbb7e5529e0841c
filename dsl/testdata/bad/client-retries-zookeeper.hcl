# expect: 9:5 Client setting not supported by the store | zookeeper clients have only "session_timeout"; "retries" is not one of them.
cluster "main" {
  store = "zookeeper"
}

workload "w" {
  mix = { put = 1 }
  client {
    retries = 2
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
