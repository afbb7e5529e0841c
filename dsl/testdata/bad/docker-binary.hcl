# expect: 6:3 Binary with the docker provider | In containers the store runs from `image`
# A server binary on this machine means nothing to a container.
cluster "main" {
  store    = "etcd"
  provider = "docker"
  binary   = "/usr/local/bin/etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
