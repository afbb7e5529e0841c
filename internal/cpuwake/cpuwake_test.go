package cpuwake

import (
	"os"
	"testing"
	"time"
)

// TestHoldKeepsCPUsFromHalting holds a bound of 0 and checks, from the
// kernel's own count of idle-state entries, that no CPU halted while it
// was held, though this test sleeps and leaves the CPUs idle; and that
// once it is dropped they do again.
func TestHoldKeepsCPUsFromHalting(t *testing.T) {
	halts := func() int64 {
		t.Helper()
		n, ok, err := Halts()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Skip("no CPU idle state with a wake-up latency under /sys/devices/system/cpu/cpu*/cpuidle (no cpuidle driver): nothing to hold")
		}
		return n
	}
	halts()
	if f, err := os.OpenFile(Device, os.O_WRONLY, 0); err != nil {
		t.Skipf("%s cannot be opened for writing (it needs root): %v", Device, err)
	} else {
		f.Close()
	}

	r, err := Hold(0)
	if err != nil {
		t.Fatal(err)
	}
	// The request wakes every halted CPU, which counts the halt it leaves
	// then: count only after that.
	time.Sleep(20 * time.Millisecond)
	before := halts()
	time.Sleep(300 * time.Millisecond)
	held := halts() - before
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("the CPUs halted %d times in 300 ms while a wake-up latency of 0 was held, want none", held)
	}

	// Dropped, the CPUs halt again when idle; on a busy machine they may
	// have no idle moment for a while, hence the time allowed.
	before = halts()
	for deadline := time.Now().Add(10 * time.Second); halts() == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no CPU halted within 10 s of the request's release")
		}
	}
}

func TestHoldRefusesABoundOutOfRange(t *testing.T) {
	for _, d := range []time.Duration{-time.Microsecond, time.Duration(1<<31) * time.Microsecond} {
		if r, err := Hold(d); err == nil {
			r.Close()
			t.Errorf("Hold(%v) = nil error, want one", d)
		}
	}
}
