//go:build !linux

package rtprio

import "errors"

// Raise is Linux only.
func Raise(int) (func(), error) {
	return nil, errors.New("real-time priority is supported on Linux only")
}
