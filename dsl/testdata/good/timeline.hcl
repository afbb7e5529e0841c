# Phase boundaries, repeated faults, restarts and fault IDs.
seed = 3

cluster "main" {
  store = "etcd"
  nodes = 5
}

workload "writers" {
  mix     = { put = 1 }
  clients = 4
}

phase "one" {
  duration = "10s"
  load "writers" {}
  # Instantaneous: no recover event.
  fault "kill" {
    target = 5
    at     = "2s"
  }
  # restart_after = 0: stopped and started at once; still a recover event.
  fault "restart" {
    target        = "leader"
    at            = "4s"
    restart_after = "0s"
  }
}

phase "two" {
  duration = "20s"
  load "writers" {
    clients = ramp(4, 8)
  }
  # every: #1..#k, each with its recover event.
  fault "pause" {
    target   = "random"
    at       = "1s"
    duration = "2s"
    every    = "6s"
  }
  # Two faults of one kind without names: IDs two/kill.1 and two/kill.2.
  fault "kill" {
    target        = [2, 1]
    at            = "3s"
    restart_after = "4s"
  }
  fault "kill" {
    target        = "follower"
    at            = "10s"
    restart_after = "5s"
  }
}

phase "three" {
  duration = "5s"
  load "writers" {
    rate = 100
  }
}
