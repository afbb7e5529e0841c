//go:build !linux

package bench

import "errors"

// sampleSoftirq has nothing to read here.
func sampleSoftirq() (softirqSample, error) {
	return softirqSample{}, errors.New("softnet_stat and ksoftirqd are Linux's")
}
