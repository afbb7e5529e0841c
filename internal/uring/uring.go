// Package uring reads frames through io_uring, many in one system call
// instead of one read(2) each.
//
// The shaper reads every frame a host sends from its TUN device, and on the
// machines this project runs on a system call's entry and exit cost about
// as much as a TUN device's own work on a small frame (page-table
// isolation, retpolines): a null system call took 1.0 µs on one, a read of
// a frame about 4. Ring.Reads submits a batch of reads that never wait in
// one io_uring_enter. Only what the shaper needs is here.
package uring

import "errors"

// ErrUnsupported is returned where io_uring, or the part of it asked for,
// cannot be used: another OS, an older kernel, or one that forbids it
// (kernel.io_uring_disabled, a seccomp filter such as a container
// runtime's default).
var ErrUnsupported = errors.New("io_uring is not available")
