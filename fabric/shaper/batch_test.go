package shaper

import (
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// batchDev is a memDev that also takes batches of frames, as a packet
// socket does, and refuses every refuseEvery-th frame written by batch.
type batchDev struct {
	*memDev
	refuseEvery int

	mu      sync.Mutex
	n       int // frames offered by batch so far
	largest int // the largest batch
}

func (d *batchDev) WriteBatch(frames [][]byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.largest = max(d.largest, len(frames))
	for i, b := range frames {
		d.n++
		if d.refuseEvery > 0 && d.n%d.refuseEvery == 0 {
			return i, errors.New("queue full")
		}
		d.memDev.Write(b)
	}
	return len(frames), nil
}

// TestBatchWrites checks that a pair's scheduler hands a destination that
// takes batches the frames due at one wake-up in one call, in order, and
// that a frame the device refuses is counted as a write error while the
// rest of its batch goes on.
func TestBatchWrites(t *testing.T) {
	const n, refuseEvery = 300, 7
	var dst *batchDev
	tn := startNetDevs(t, 2, Options{Engage: true}, func(i int, d *memDev) io.ReadWriter {
		if i == 1 {
			dst = &batchDev{memDev: d, refuseEvery: refuseEvery}
			return dst
		}
		return d
	}, func(r *Router) { r.SetLink(hostID(0), hostID(1), Link{Delay: 5 * time.Millisecond}) })
	tn.send(0, 1, n, 100, 0)
	want := n - n/refuseEvery
	got := tn.recv(t, 1, want, 10*time.Second)
	tn.quiet(t, 1, 50*time.Millisecond)
	if err := tn.stop(); err != nil {
		t.Fatal(err)
	}
	for k, a := range got {
		if k > 0 && seqOf(a.b) <= seqOf(got[k-1].b) {
			t.Fatalf("seq %d after %d: out of order", seqOf(a.b), seqOf(got[k-1].b))
		}
		if (seqOf(a.b)+1)%refuseEvery == 0 {
			t.Fatalf("seq %d arrived, but the device refused it", seqOf(a.b))
		}
	}
	st := tn.pair(0, 1)
	if st.Forwarded != uint64(want) || st.WriteErrors != uint64(n/refuseEvery) {
		t.Errorf("forwarded %d with %d write errors, want %d and %d", st.Forwarded, st.WriteErrors, want, n/refuseEvery)
	}
	if dst.largest < 2 {
		t.Errorf("the largest batch held %d frames: the scheduler wrote frame by frame", dst.largest)
	}
}
