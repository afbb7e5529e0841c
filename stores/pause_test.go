package stores

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestPauser freezes a connection to an echo server: nothing gets through
// while frozen, everything written meanwhile arrives, in order, after the
// thaw.
func TestPauser(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	p := NewPauser(nil)
	c, err := p.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	echo := func(msg string) string {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, len(msg))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := echo("before"); got != "before" {
		t.Fatalf("echo %q", got)
	}

	p.Freeze()
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("during"))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write went through a frozen connection (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	read := make(chan string, 1)
	go func() {
		b := make([]byte, 6)
		_, _ = io.ReadFull(c, b)
		read <- string(b)
	}()
	p.Thaw()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-read:
		if got != "during" {
			t.Fatalf("after the thaw read %q, want what was written during the freeze", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived after the thaw")
	}

	// A frozen dial waits for the thaw; closing a frozen connection
	// releases its reader.
	p.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Dial(ctx, ln.Addr().String()); err == nil {
		t.Fatal("dialled through a frozen pauser")
	}
	done := make(chan struct{})
	go func() {
		_, _ = c.Read(make([]byte, 1))
		close(done)
	}()
	c.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a read on a closed frozen connection never returned")
	}
}
