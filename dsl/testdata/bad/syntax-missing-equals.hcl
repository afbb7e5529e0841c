# expect: 4:15 Invalid block definition | A block definition must have block content
# An attribute without '='.
cluster "main" {
  store "etcd"
}
