package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

// spoolPhases leave a hole (20-21 s) between b and c, so that some samples
// fall outside every phase.
var spoolPhases = []plan.PhaseSpan{span("a", 0, 10*s), span("b", 10*s, 10*s), span("c", 21*s, 4*s)}

// spoolStep is one merge of a script: its samples, then a seal of the
// seconds before seal (a seal at or below what is sealed still re-encodes
// late write times).
type spoolStep struct {
	samples []Sample
	seal    int
}

func wput(wl string, end time.Duration) Sample {
	x := put(end-ms, end-ms, end, "")
	x.Workload = wl
	return x
}

func wget(wl string, end time.Duration) Sample {
	x := get(end-2*ms, end-ms, end, "")
	x.Workload = wl
	return x
}

// steadyLoad is a write of w and a read of r every step in [from, to).
func steadyLoad(from, to, step time.Duration) []Sample {
	var out []Sample
	for at := from; at < to; at += step {
		out = append(out, wput("w", at), wget("r", at+step/2))
	}
	return out
}

// spoolScripts are run with and without a spool: late arrivals into sealed
// (spooled) seconds, into sealed empty seconds, write gaps across a phase
// boundary, seconds without any sample, failures and samples outside every
// phase.
func spoolScripts() []struct {
	name  string
	steps []spoolStep
} {
	var steady []spoolStep
	for sec := range 25 {
		at := time.Duration(sec) * s
		steady = append(steady, spoolStep{samples: steadyLoad(at, at+s, 20*ms), seal: sec - 1})
	}

	rng := rand.New(rand.NewPCG(7, 11))
	var random []spoolStep
	for i := range 30 {
		var st spoolStep
		for range 100 {
			end := time.Duration(rng.Int64N(int64(26 * s)))
			if rng.IntN(3) == 0 { // bursts, so that the longest gap moves
				end = 12*s + time.Duration(rng.Int64N(int64(2*s)))
			}
			x := wput([]string{"w", "v"}[rng.IntN(2)], end)
			switch rng.IntN(6) {
			case 0:
				x.Class = plan.ErrTimeout
			case 1:
				x = wget("r", end)
			}
			st.samples = append(st.samples, x)
		}
		st.seal = i * 26 / 30
		if i%7 == 3 {
			st.seal = 2 // below what is sealed: late times re-encoded only
		}
		random = append(random, st)
	}

	return []struct {
		name  string
		steps []spoolStep
	}{
		{name: "steady, seals lagging", steps: steady},
		{name: "late arrivals into sealed seconds", steps: []spoolStep{
			{samples: steadyLoad(0, 8*s, 100*ms), seal: 8},
			{samples: []Sample{wput("w", 2*s+550*ms), wput("w", 5*s+50*ms), wput("v", 7*s+999*ms), wput("w", 8*s+500*ms)}, seal: 8},
			{samples: append(steadyLoad(9*s, 12*s, 100*ms), wput("w", 3*s+300*ms)), seal: 11},
			{samples: []Sample{wput("w", 2*s+551*ms), wput("w", 2*s+50*ms)}, seal: 11},
			{samples: []Sample{wput("v", 10*s+5*ms)}, seal: 3},
		}},
		{name: "empty seconds, a gap across the phase boundary", steps: []spoolStep{
			{samples: steadyLoad(0, 3*s, 50*ms), seal: 12}, // 3..11 sealed empty
			{samples: []Sample{wput("w", 6*s+500*ms)}, seal: 12},
			{samples: append(steadyLoad(13*s, 20*s, 50*ms), wput("w", 9*s+999*ms), wput("v", 20*s+500*ms)), seal: 19},
			{samples: []Sample{wput("w", 11*s)}, seal: 19},
			{samples: steadyLoad(21*s, 25*s, 250*ms), seal: 25},
		}},
		{name: "random bursts", steps: random},
	}
}

// playScript feeds steps to c and returns, step by step, what the
// collector answers: the last write before and the longest gap around
// instants all over the run, and a snapshot.
func playScript(t *testing.T, c *Collector, steps []spoolStep) []string {
	t.Helper()
	var out []string
	for i, st := range steps {
		record(c, st.samples...)
		c.mu.Lock()
		c.merge()
		c.seal(st.seal)
		c.mu.Unlock()
		// Snapshots cost most under -race: a long script takes some.
		snap := len(steps) <= 6 || i%5 == 4
		out = append(out, collectorAnswers(t, c, fmt.Sprintf("step %d", i), snap)...)
	}
	return out
}

func collectorAnswers(t *testing.T, c *Collector, when string, snapshot bool) []string {
	t.Helper()
	var out []string
	for at := time.Duration(0); at <= 26*s; at += 333 * ms {
		last, ok := c.LastWriteBefore(at)
		out = append(out, fmt.Sprintf("%s: last write before %v: %v %v", when, at, last, ok))
	}
	for _, r := range [][2]time.Duration{{0, 26 * s}, {2 * s, 9 * s}, {9*s + 500*ms, 14 * s}, {5 * s, 5*s + 800*ms}} {
		start, end := c.LongestWriteGap(r[0], r[1])
		out = append(out, fmt.Sprintf("%s: longest gap in %v: [%v, %v]", when, r, start, end))
	}
	if !snapshot {
		return out
	}
	b, err := json.Marshal(c.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	return append(out, when+": snapshot "+string(b))
}

// finish ends the run and returns the final answers and the directory of
// its interval logs.
func finish(t *testing.T, c *Collector) ([]string, string) {
	t.Helper()
	b, err := json.Marshal(c.Results())
	if err != nil {
		t.Fatal(err)
	}
	out := append(collectorAnswers(t, c, "end", false), "results "+string(b))
	dir := t.TempDir()
	if err := c.WriteIntervalLogs(dir); err != nil {
		t.Fatalf("WriteIntervalLogs: %v", err)
	}
	return out, dir
}

func newSpoolCollector(base time.Time) *Collector {
	wl := []plan.WorkloadSpec{{Name: "w"}, {Name: "v"}, {Name: "r"}}
	return NewCollector(spoolPhases, wl, base)
}

func sameAnswers(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d differs:\n spooled  %.600s\n memory   %.600s", i, got[i], want[i])
		}
	}
}

func sameFiles(t *testing.T, got, want string) {
	t.Helper()
	names := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	gotNames, wantNames := names(got), names(want)
	if !slices.Equal(gotNames, wantNames) || len(wantNames) == 0 {
		t.Fatalf("interval logs %v, want %v", gotNames, wantNames)
	}
	for _, n := range wantNames {
		g, err := os.ReadFile(filepath.Join(got, n))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(want, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("%s: %d bytes spooled, %d in memory, not the same", n, len(g), len(w))
		}
	}
}

// inMemory is what a collector holds in memory of its sealed seconds:
// write-time encodings and interval log lines (beyond a write buffer).
func inMemory(c *Collector) (enc, hlog int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tracks := []*writeTrack{c.writes}
	for _, t := range c.wlWrites {
		tracks = append(tracks, t)
	}
	for _, t := range tracks {
		for k := range min(c.sealed, len(t.log.chunks)) {
			enc += len(t.log.chunks[k].enc)
		}
	}
	for _, st := range c.ops {
		hlog += st.log.Len()
	}
	return enc, hlog
}

// TestSpoolSameAnswers plays each script into a collector in memory and
// one spooling: every answer along the way, the results and the interval
// logs must be the same.
func TestSpoolSameAnswers(t *testing.T) {
	for _, sc := range spoolScripts() {
		t.Run(sc.name, func(t *testing.T) {
			base := time.Now().Add(-time.Hour)
			mem, sp := newSpoolCollector(base), newSpoolCollector(base)
			if err := sp.SpoolTo(filepath.Join(t.TempDir(), "spool")); err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			want := playScript(t, mem, sc.steps)
			got := playScript(t, sp, sc.steps)
			sameAnswers(t, got, want)
			wantEnd, wantDir := finish(t, mem)
			gotEnd, gotDir := finish(t, sp)
			sameAnswers(t, gotEnd, wantEnd)
			sameFiles(t, gotDir, wantDir)
			if err := sp.SpoolErr(); err != nil {
				t.Errorf("SpoolErr: %v", err)
			}
			if enc, hlog := inMemory(sp); enc != 0 || hlog != 0 {
				t.Errorf("after the run, %d bytes of write times and %d of interval logs in memory, want 0", enc, hlog)
			}
		})
	}
}

// TestSpoolMemory feeds a spooling collector minutes of writes: the sealed
// seconds' write times and interval lines must all be on disk.
func TestSpoolMemory(t *testing.T) {
	const seconds = 100
	base := time.Now().Add(-time.Hour)
	phases := []plan.PhaseSpan{span("p", 0, seconds*s)}
	wl := []plan.WorkloadSpec{{Name: "w"}, {Name: "v"}}
	mem, sp := NewCollector(phases, wl, base), NewCollector(phases, wl, base)
	if err := sp.SpoolTo(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for sec := range seconds {
		var samples []Sample
		for i := range 200 {
			if sec >= 50 && sec < 53 {
				break // sealed empty
			}
			at := time.Duration(sec)*s + time.Duration(i)*5*ms + time.Duration(i%7)*time.Microsecond
			samples = append(samples, wput([]string{"w", "v"}[i%2], at))
		}
		if sec%10 == 9 { // a late arrival into a spooled second
			samples = append(samples, wput("w", time.Duration(sec-5)*s+123*time.Microsecond))
		}
		for _, c := range []*Collector{mem, sp} {
			record(c, samples...)
			c.mu.Lock()
			c.merge()
			c.seal(sec - 1)
			c.mu.Unlock()
		}
		if enc, hlog := inMemory(sp); enc != 0 || hlog != 0 {
			t.Fatalf("second %d: %d bytes of sealed write times and %d of interval logs in memory, want 0", sec, enc, hlog)
		}
	}
	// The measure measures something: without a spool they are there.
	if enc, hlog := inMemory(mem); enc < 3*200*(seconds-5) || hlog == 0 {
		t.Errorf("in memory without a spool: %d bytes of write times, %d of interval logs; want > 0", enc, hlog)
	}
	// A second sealed empty stays sealed once spooling: a write into it is
	// late, and so is one into a spooled second.
	for _, at := range []time.Duration{51 * s, 10 * s} {
		sp.mu.Lock()
		late := sp.writes.log.add(at)
		sp.mu.Unlock()
		if !late {
			t.Errorf("a write at %v, in a sealed second, is not late", at)
		}
	}
	if err := sp.SpoolErr(); err != nil {
		t.Errorf("SpoolErr: %v", err)
	}
}

// spoolFaults makes spool files fail on demand. Only the test's goroutine
// and the collector under its mutex touch it, one at a time.
type spoolFaults struct {
	budget    int64  // bytes writes may still put in files; < 0: no limit
	failReads bool   // every read fails
	noCreate  string // files whose name ends so cannot be created
}

func (f *spoolFaults) open(path string) (spoolBacking, error) {
	if f.noCreate != "" && strings.HasSuffix(path, f.noCreate) {
		return nil, syscall.EACCES
	}
	file, err := openSpoolFile(path)
	if err != nil {
		return nil, err
	}
	return faultyFile{file.(*os.File), f}, nil
}

type faultyFile struct {
	*os.File
	f *spoolFaults
}

// WriteAt writes what the budget allows, as a full disk would, and fails
// if that is not all.
func (x faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if x.f.budget < 0 {
		return x.File.WriteAt(p, off)
	}
	n, err := x.File.WriteAt(p[:min(int64(len(p)), x.f.budget)], off)
	x.f.budget -= int64(n)
	if err == nil && n < len(p) {
		err = syscall.ENOSPC
	}
	return n, err
}

func (x faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if x.f.failReads {
		return 0, syscall.EIO
	}
	return x.File.ReadAt(p, off)
}

// TestSpoolErrors fails the spool in ways a disk can: every failure is
// reported by SpoolErr, and once reads work again, nothing is lost.
func TestSpoolErrors(t *testing.T) {
	script := spoolScripts()[1].steps // late arrivals into sealed seconds
	tests := []struct {
		name   string
		before func(step int, f *spoolFaults) // sets the faults for a step
		// The spooled write times still in memory after the run.
		wantEnc bool
	}{
		{
			name:    "no write ever succeeds",
			before:  func(_ int, f *spoolFaults) { f.budget = 0 },
			wantEnc: true,
		},
		{
			name: "the disk fills up, then space is freed",
			before: func(step int, f *spoolFaults) {
				switch step {
				case 0:
					f.budget = 200
				case 3:
					f.budget = -1
				}
			},
		},
		{
			name: "reads fail while late arrivals come in",
			before: func(step int, f *spoolFaults) {
				f.budget = -1
				f.failReads = step >= 1 && step < 4
			},
		},
		{
			name: "no interval log spool can be created",
			before: func(step int, f *spoolFaults) {
				f.budget, f.noCreate = -1, ".hlog.spool"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := time.Now().Add(-time.Hour)
			mem, sp := newSpoolCollector(base), newSpoolCollector(base)
			faults := &spoolFaults{budget: -1}
			tt.before(0, faults)
			if err := sp.spoolTo(t.TempDir(), faults.open); err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			for i, st := range script {
				tt.before(i, faults)
				playScript(t, mem, []spoolStep{st})
				playScript(t, sp, []spoolStep{st})
			}
			wantEnd, wantDir := finish(t, mem)
			gotEnd, gotDir := finish(t, sp)
			sameAnswers(t, gotEnd, wantEnd)
			sameFiles(t, gotDir, wantDir)
			if err := sp.SpoolErr(); err == nil {
				t.Error("SpoolErr = nil after a failure")
			}
			if enc, _ := inMemory(sp); (enc > 0) != tt.wantEnc {
				t.Errorf("%d bytes of sealed write times in memory, want any: %v", enc, tt.wantEnc)
			}
		})
	}

	t.Run("reads fail at the end", func(t *testing.T) {
		c := newSpoolCollector(time.Now().Add(-time.Hour))
		faults := &spoolFaults{budget: -1}
		if err := c.spoolTo(t.TempDir(), faults.open); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		playScript(t, c, script)
		c.Flush()
		faults.failReads = true
		if _, ok := c.LastWriteBefore(time.Second); ok {
			t.Error("LastWriteBefore(1s) found a write it could not read")
		}
		if err := c.SpoolErr(); err == nil || !strings.Contains(err.Error(), "read") {
			t.Errorf("SpoolErr = %v, want the read error", err)
		}
		if err := c.WriteIntervalLogs(t.TempDir()); err == nil {
			t.Error("WriteIntervalLogs wrote interval logs it could not read back")
		}
	})
}

func TestSpoolToAndClose(t *testing.T) {
	c := newSpoolCollector(time.Now().Add(-time.Hour))
	if err := c.Close(); err != nil {
		t.Errorf("Close without a spool: %v", err)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.SpoolTo(filepath.Join(blocker, "spool")); err == nil {
		t.Error("SpoolTo under a regular file succeeded")
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := c.SpoolTo(dir); err != nil {
		t.Fatalf("SpoolTo after a failed one: %v", err)
	}
	if err := c.SpoolTo(dir); err == nil {
		t.Error("a second SpoolTo succeeded")
	}
	record(c, wput("w", s))
	c.Flush()
	if err := newSpoolCollector(time.Now()).SpoolTo(t.TempDir()); err != nil {
		t.Errorf("SpoolTo on a fresh collector: %v", err)
	}
	late := newSpoolCollector(time.Now())
	record(late, wput("w", s))
	late.Flush()
	if err := late.SpoolTo(t.TempDir()); err == nil {
		t.Error("SpoolTo after samples were merged succeeded")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
