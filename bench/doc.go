// Package bench compares the scenario workload engine with etcd's own
// benchmark tool on one real etcd cluster. It holds only benchmarks (see
// etcd_put_test.go); run them with `make bench`.
package bench
