# Load shapes, workload options and checks over every metric scope.
variable "p99_budget_ms" {
  type    = number
  default = 250
}

cluster "main" {
  store = "etcd"
}

workload "writers" {
  mix          = { put = 0.7, delete = 0.1, get = 0.2 }
  key_size     = "64B"
  value_size   = "2KiB"
  keyspace     = 50000
  key_prefix   = "/w/"
  distribution = "zipfian"
  clients      = 32
  conns        = 8
  timeout      = "1500ms"
  seed         = 1234
}

workload "scanners" {
  mix          = { range = 1 }
  distribution = "sequential"
  range_limit  = 50
}

phase "ramp-up" {
  duration = "30s"
  load "writers" {
    rate = ramp(0, 1000)
  }
  load "scanners" {
    clients = ramp(1, 5)
  }
}

phase "steady" {
  duration = "1m"
  load "writers" {
    rate = 1000
  }
  load "scanners" {
    clients = 5
  }
}

phase "cool-down" {
  duration = "30s"
  load "writers" {
    clients = ramp(32, 1)
  }
}

check "put p99 within budget" {
  condition     = phase.steady.put.p99 < ms(var.p99_budget_ms)
  message       = "budget from var.p99_budget_ms"
  abort_on_fail = true
}

check "per workload" {
  condition = phase.steady.workload.scanners.range.p50 < ms(20) && phase.steady.workload.writers.availability > 0.999
}

check "errors by class" {
  condition = phase.steady.errors_by.timeout == 0 && phase.steady.errors_by["unavailable"] < 10
}

check "whole run" {
  condition = run.linearizable && run.lost_writes == 0 && run.put.count > 1000
}
