//go:build unix

package gobuild

import (
	"context"
	"path/filepath"
	"testing"
)

func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := LockFile(context.Background(), path, func() {})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := false
	_, err = LockFile(ctx, path, func() { waited = true; cancel() })
	if err == nil || !waited {
		t.Fatalf("second lock: err=%v waited=%v; want it to wait and give up on cancel", err, waited)
	}
	unlock()
	unlock2, err := LockFile(context.Background(), path, func() { t.Error("waited for a free lock") })
	if err != nil {
		t.Fatal(err)
	}
	unlock2()
}
