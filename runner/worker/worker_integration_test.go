package worker

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/storetest"
)

// countSink counts samples and remembers the times it saw.
type countSink struct {
	mu       sync.Mutex
	n        int
	min, max time.Duration
}

func (s *countSink) Record(x metrics.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 || x.Start < s.min {
		s.min = x.Start
	}
	s.max = max(s.max, x.End)
	s.n++
}

// TestRemoteWorkers runs a load on two workers against a real etcd, the
// way the runner does with pods, over in-process pipes: every operation's
// sample and history entry comes back, the two never share a writer id,
// and the samples land where the load was placed on the runner's timeline.
func TestRemoteWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := etcd.Install(ctx, etcd.InstallOptions{Version: etcd.DefaultVersion})
	if err != nil {
		t.Fatal(err)
	}
	addrs := storetest.FreeAddrs(t, 2)
	cmd := exec.Command(bin, "--data-dir", filepath.Join(t.TempDir(), "d"), "--unsafe-no-fsync",
		"--listen-client-urls", "http://"+addrs[0], "--advertise-client-urls", "http://"+addrs[0],
		"--listen-peer-urls", "http://"+addrs[1], "--initial-advertise-peer-urls", "http://"+addrs[1],
		"--initial-cluster", "default=http://"+addrs[1])
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	w := plan.WorkloadSpec{Name: "w", Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}},
		Consistency: "linearizable", KeySize: 16, ValueSize: 64, Keyspace: 100, Seed: 1, Clients: 4, Conns: 1,
		Timeout: plan.Duration(2 * time.Second)}
	base := time.Now()
	now := func() time.Duration { return time.Since(base) }
	var hmu sync.Mutex
	writers := map[int]map[int]bool{} // worker -> generator ids seen
	sinks := []*countSink{{}, {}}
	var remotes []*Remote
	var serving sync.WaitGroup
	for i := range 2 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		serving.Go(func() {
			if err := Serve(ctx, inR, outW, nil); err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
			outW.Close()
		})
		writers[i] = map[int]bool{}
		r, err := Connect(ctx, inW, outR, Setup{Store: "etcd", Workload: SplitWorkload(w, i, 2),
			Endpoints: []Endpoint{{Node: 1, ClientAddr: addrs[0], PeerAddr: addrs[1]}}, FirstID: (i + 1) * workload.IDStride},
			RemoteOptions{Name: "w", Sink: sinks[i], Now: now, History: func(op workload.HistoryOp) {
				hmu.Lock()
				writers[i][op.ClientID] = true
				hmu.Unlock()
				if op.Return <= op.Call {
					t.Errorf("history op returns before its call: %+v", op)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		off, margin := r.Offset()
		t.Logf("worker %d: clock offset %v ± %v", i, off, margin)
		if off > 50*time.Millisecond || off < -50*time.Millisecond {
			t.Errorf("worker %d in this process is %v off the runner's clock", i, off)
		}
		remotes = append(remotes, r)
	}
	load := plan.LoadSpec{Workload: "w", Mode: plan.LoadClosed, ClientsFrom: 4, ClientsTo: 4, Duration: plan.Duration(time.Second)}
	start := now() + 200*time.Millisecond
	var sent int64
	stats := make([]workload.Stats, 2)
	var runs sync.WaitGroup
	for i, r := range remotes {
		runs.Go(func() {
			var err error
			if stats[i], err = r.Run(ctx, Split(load, i, 2), start); err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	runs.Wait()
	for i, st := range stats {
		sent += st.Sent
		sinks[i].mu.Lock()
		if int64(sinks[i].n) != st.Sent || st.Sent == 0 {
			t.Errorf("worker %d sent %d ops, %d samples came back", i, st.Sent, sinks[i].n)
		}
		if sinks[i].min < start-50*time.Millisecond || sinks[i].max > start+time.Second+3*time.Second {
			t.Errorf("worker %d samples span %v..%v on the runner's clock, load was at %v for 1s", i, sinks[i].min, sinks[i].max, start)
		}
		sinks[i].mu.Unlock()
	}
	if sent == 0 {
		t.Fatal("no operation sent")
	}
	for id := range writers[0] {
		if writers[1][id] {
			t.Errorf("generator id %d used by both workers", id)
		}
	}
	for _, r := range remotes {
		r.Close()
	}
	serving.Wait()
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
}
