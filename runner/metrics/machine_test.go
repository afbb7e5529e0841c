package metrics

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	const two = "cpu  100 5 50 800 20 3 2 20 7 0\ncpu0 50 2 25 400 10 1 1 10 7 0\ncpu1 50 3 25 400 10 2 1 10 0 0\nintr 1 2\nctxt 99\n"
	tests := []struct {
		name               string
		in                 string
		cpus               int
		busy, steal, total uint64
		wantErr            string
	}{
		// Guest time (7) is already in user: not counted twice.
		{name: "two cpus", in: two, cpus: 2, busy: 160, steal: 20, total: 1000},
		// Kernels before 2.6.11 have no steal column; we need it.
		{name: "short", in: "cpu  1 2 3 4 5 6 7\n", wantErr: "short cpu line"},
		{name: "not a number", in: "cpu  1 2 x 4 5 6 7 8\n", wantErr: "in /proc/stat"},
		{name: "no cpu line", in: "intr 1\n", wantErr: "no cpu line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c machineCounters
			cpus, err := parseProcStat([]byte(tc.in), &c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cpus != tc.cpus || c.busy != tc.busy || c.steal != tc.steal || c.total != tc.total {
				t.Errorf("cpus %d busy %d steal %d total %d, want %d %d %d %d", cpus, c.busy, c.steal, c.total, tc.cpus, tc.busy, tc.steal, tc.total)
			}
		})
	}
}

func TestParsePressureSome(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=9\n", 123456, true},
		{"full avg10=0.00 avg60=0.00 avg300=0.00 total=9\n", 0, false},
		{"some avg10=1.00 total=x\n", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		if got, ok := parsePressureSome([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("parsePressureSome(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// fakeMachine writes /proc/stat and, when waitUS >= 0, /proc/pressure/cpu.
func fakeMachine(t *testing.T, root string, busy, idle, steal uint64, waitUS int64) {
	t.Helper()
	stat := "cpu  " + itoa(busy) + " 0 0 " + itoa(idle) + " 0 0 0 " + itoa(steal) + " 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n"
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	pressure := filepath.Join(root, "pressure", "cpu")
	if waitUS < 0 {
		os.Remove(pressure)
		return
	}
	if err := os.MkdirAll(filepath.Dir(pressure), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + itoa(uint64(waitUS)) + "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	if err := os.WriteFile(pressure, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestMachineSampler(t *testing.T) {
	root := t.TempDir()
	m := NewMachineSampler()
	m.procRoot = root

	// Before the first phase (the preload): offsets are negative, and
	// the points count in the run's machine summary all the same.
	fakeMachine(t, root, 800, 4900, 10, 900_000)
	m.SampleAt(-2 * s) // baseline only
	fakeMachine(t, root, 900, 5000, 10, 1_000_000)
	m.SampleAt(-1 * s)
	// A CPU taken offline: busy falls. Skipped, not read as a wrap.
	fakeMachine(t, root, 600, 6000, 10, 1_000_000)
	m.SampleAt(500 * ms)
	fakeMachine(t, root, 1000, 5000, 10, 1_000_000)
	m.SampleAt(1 * s)
	// 200 ticks of two CPUs' 200: 60 busy, 130 idle, 10 stolen; a task
	// waited 250 ms of the second.
	fakeMachine(t, root, 1060, 5130, 20, 1_250_000)
	m.SampleAt(2 * s)
	// The pressure file goes away (as with psi=0): wait is unknown.
	fakeMachine(t, root, 1260, 5130, 20, -1)
	m.SampleAt(3 * s)
	// /proc/stat unreadable: no point, and the next read is a baseline.
	os.Remove(filepath.Join(root, "stat"))
	m.SampleAt(4 * s)
	fakeMachine(t, root, 1300, 5200, 20, -1)
	m.SampleAt(5 * s)

	r := m.Result()
	if r == nil {
		t.Fatal("no result")
	}
	if r.CPUs != 2 || len(r.Points) != 3 {
		t.Fatalf("cpus %d, points %+v; want 2 CPUs and 3 points", r.CPUs, r.Points)
	}
	if p := r.Points[0]; p.AtMS != -1000 || p.BusyShare != 0.5 {
		t.Errorf("point before the timeline %+v, want at -1000 busy 0.5", p)
	}
	r.Points = r.Points[1:]
	p := r.Points[0]
	if p.AtMS != 2000 || p.BusyShare != 0.3 || p.StealShare != 0.05 || p.WaitShare == nil || *p.WaitShare != 0.25 {
		t.Errorf("first point %+v (wait %v), want at 2000 busy 0.3 steal 0.05 wait 0.25", p, p.WaitShare)
	}
	p = r.Points[1]
	if p.AtMS != 3000 || p.BusyShare != 1 || p.StealShare != 0 || p.WaitShare != nil {
		t.Errorf("second point %+v, want at 3000 busy 1 steal 0 and no wait", p)
	}
	if r.Summary.Samples != 3 || r.Summary.StealMaxShare != 0.05 {
		t.Errorf("summary %+v", r.Summary)
	}
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "sample the machine") {
		t.Errorf("Err() = %v, want the failed read", err)
	}
}

// TestMachineSamplerReadsThisMachine reads the real /proc/stat: a kernel
// whose format we misread fails here, not in a user's results.
func TestMachineSamplerReadsThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat on this system: the machine is not sampled here")
	}
	m := NewMachineSampler()
	start := time.Now()
	m.SampleAt(0)
	// Keep a CPU busy for a few of the kernel's 10 ms ticks, so that busy
	// cannot read as zero.
	for time.Since(start) < 300*time.Millisecond {
	}
	m.SampleAt(time.Since(start))
	r := m.Result()
	if err := m.Err(); err != nil || r == nil {
		t.Fatalf("result %v, err %v", r, err)
	}
	p := r.Points[0]
	if r.CPUs < 1 || p.BusyShare <= 0 || p.BusyShare > 1 || p.StealShare < 0 || p.StealShare > 1 {
		t.Errorf("cpus %d, point %+v: want at least one CPU, some busy time and shares in [0, 1]", r.CPUs, p)
	}
	if _, err := os.Stat("/proc/pressure/cpu"); err == nil && (p.WaitShare == nil || *p.WaitShare < 0 || *p.WaitShare > 1) {
		t.Errorf("wait %v: this kernel has CPU pressure, want a share in [0, 1]", p.WaitShare)
	}
}
