package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
)

// exec runs command in a container of a pod of the run, stdin from in
// (may be nil) and stdout to out (may be nil), over WebSocket or, from an
// older API server, SPDY.
func (r *Run) exec(ctx context.Context, pod, container string, in io.Reader, out io.Writer, command ...string) error {
	req := r.k.Core.execURL(r.ns, pod, &corev1.PodExecOptions{Container: container, Command: command, Stdin: in != nil, Stdout: true, Stderr: true})
	ws, err := remotecommand.NewWebSocketExecutor(r.k.Config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.k.Config, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	if out == nil {
		out = io.Discard
	}
	stderr := &syncBuffer{limit: 64 << 10}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out, Stderr: stderr})
	if msg := strings.TrimSpace(stderr.String()); err != nil && msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

// syncBuffer is a buffer its writers and readers may use at once: a
// stream cut short by its context returns while client-go's copiers may
// still write. It keeps the first limit bytes (0: all).
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if b.limit > 0 {
		n = min(n, max(b.limit-b.buf.Len(), 0))
	}
	b.buf.Write(p[:n])
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
