# expect: 3:16 Unclosed configuration block | There is no closing brace for this block
# A missing closing brace: the parser stops before anything is decoded.
cluster "main" {
  store = "etcd"
  nodes = 3

workload "w" {
  mix = { put = 1 }
}
