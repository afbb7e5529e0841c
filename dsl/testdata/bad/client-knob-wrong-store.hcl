# expect: 9:5 Client setting not supported by the store | consul clients have no client settings yet; "keepalive_time" is not one of them.
cluster "main" {
  store = "consul"
}

workload "w" {
  mix = { put = 1 }
  client {
    keepalive_time = "10s"
  }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
