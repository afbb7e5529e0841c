//go:build !unix

package gobuild

import "context"

// LockFile does nothing where flock is not available: concurrent installs
// may then build twice, and the atomic rename still leaves one whole binary.
func LockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	return func() {}, ctx.Err()
}
