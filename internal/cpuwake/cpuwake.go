// Package cpuwake keeps the machine's idle CPUs quick to wake while a
// run lasts, through the kernel's CPU latency QoS (/dev/cpu_dma_latency,
// what cyclictest holds by default). With a bound of 0 the idle governor
// picks only polling idle states, so an idle CPU, or a virtual machine's
// idle vCPU, is never halted: a thread woken on it (the shaper's timer,
// the open loop's dispatcher, a store's reply) runs at once, where a
// halted vCPU is woken by the host some tens of microseconds, and at
// times over a millisecond, later. An idle CPU then spins instead of
// halting; the spinning gives way the moment anything is runnable, so it
// takes no time from the stores, but it keeps the CPU (the host's core,
// for a vCPU) busy. The kernel drops the request when its file is closed,
// so a process that dies leaves nothing behind.
package cpuwake

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Device is the kernel's CPU latency QoS device.
const Device = "/dev/cpu_dma_latency"

// Request is a held bound on every CPU's wake-up latency.
type Request struct{ f *os.File }

// Hold asks the kernel to keep every CPU's wake-up latency within limit
// (whole microseconds; 0 keeps idle CPUs polling) until Close. It needs
// write access to Device, root's by default.
func Hold(limit time.Duration) (*Request, error) {
	if limit < 0 || limit.Microseconds() > 1<<31-1 {
		return nil, fmt.Errorf("wake-up latency bound %v: want 0 to %v", limit, time.Duration(1<<31-1)*time.Microsecond)
	}
	f, err := os.OpenFile(Device, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("hold the CPUs' wake-up latency at %d µs: %w (it needs write access to %s, root's, and a Linux kernel with CPU idle states)", limit.Microseconds(), err, Device)
	}
	// Four bytes are read as a binary s32 in microseconds; any other
	// length as a hexadecimal string.
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(limit.Microseconds()))
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("hold the CPUs' wake-up latency at %d µs: write %s: %w", limit.Microseconds(), Device, err)
	}
	return &Request{f: f}, nil
}

// Close drops the request: the CPUs may halt again when idle.
func (r *Request) Close() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("drop the wake-up latency request: %w", err)
	}
	return nil
}

// Halts is how many times the machine's CPUs have entered an idle state
// with a wake-up latency (halted, or deeper), summed over the CPUs, by the
// kernel's own counts (cpuidle's usage). ok is false when the machine has
// no such state, where there is nothing to hold.
func Halts() (n int64, ok bool, err error) {
	dirs, err := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*")
	if err != nil {
		return 0, false, err
	}
	for _, d := range dirs {
		lat, err := readInt(filepath.Join(d, "latency"))
		if err != nil {
			return 0, false, err
		}
		if lat == 0 {
			continue
		}
		use, err := readInt(filepath.Join(d, "usage"))
		if err != nil {
			return 0, false, err
		}
		n, ok = n+use, true
	}
	return n, ok, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
