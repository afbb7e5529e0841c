package checker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

func TestCheckLinearizable(t *testing.T) {
	tests := []struct {
		name     string
		history  []Entry
		want     string
		ops      int      // operations checked
		offended []string // keys expected in Offending, on a violation
	}{
		{
			name: "sequential",
			history: []Entry{
				getAbsent(0, 0, 1), put(0, "a", 2, 3), get(1, "a", 4, 5), put(1, "b", 6, 7),
				get(0, "b", 8, 9), del(0, 10, 11), getAbsent(1, 12, 13),
			},
			want: Linearizable, ops: 7,
		},
		{
			name:    "stale read after acknowledged write",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3), get(1, "a", 4, 5)},
			want:    Violation, ops: 3, offended: []string{"k"},
		},
		{
			name: "concurrent writes ordered against call order",
			// b is called later but must take effect first: both reads see a.
			history: []Entry{put(0, "a", 0, 10), put(1, "b", 1, 5), get(2, "a", 6, 7), get(2, "a", 11, 12)},
			want:    Linearizable, ops: 4,
		},
		{
			name: "concurrent read sees either value",
			history: []Entry{
				put(0, "a", 0, 1), put(1, "b", 2, 10), get(2, "a", 3, 4), get(3, "b", 5, 6), get(2, "b", 11, 12),
			},
			want: Linearizable, ops: 5,
		},
		{
			name: "value flips back while writes overlap",
			history: []Entry{
				put(0, "a", 0, 1), put(1, "b", 2, 10), get(2, "b", 3, 4), get(3, "a", 5, 6),
			},
			want: Violation, ops: 4, offended: []string{"k"},
		},
		{
			name:    "timed-out put read later",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrTimeout), get(1, "b", 10, 11)},
			want:    Linearizable, ops: 3,
		},
		{
			name: "timed-out put applied long after its client gave up",
			history: []Entry{
				put(0, "b", 0, 1).failed(plan.ErrConnection), put(0, "a", 2, 3), get(1, "a", 4, 5), get(1, "b", 6, 7),
			},
			want: Linearizable, ops: 4,
		},
		{
			// Nobody read b, so the failed put is left out of the check.
			name:    "unavailable put never applied",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrUnavailable), get(1, "a", 10, 11)},
			want:    Linearizable, ops: 2,
		},
		{
			name:    "an election's worth of refused writes nobody read",
			history: refusedWrites(2000),
			want:    Linearizable, ops: 3,
		},
		{
			// Only b's own put could have written it, and only before the
			// read of a can it not have: a read after its failure sees it.
			name: "unavailable put observed is kept",
			history: []Entry{
				put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrUnavailable), get(1, "a", 4, 5), get(1, "b", 10, 11),
			},
			want: Linearizable, ops: 4,
		},
		{
			name:    "value read that nobody wrote",
			history: []Entry{put(0, "a", 0, 1), get(1, "b", 10, 11)},
			want:    Violation, ops: 2, offended: []string{"k"},
		},
		{
			name:    "value read whose put was refused",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrOther), get(1, "b", 10, 11)},
			want:    Violation, ops: 2, offended: []string{"k"},
		},
		{
			name:    "failed read is not checked",
			history: []Entry{put(0, "a", 0, 1), get(1, "zzz", 2, 3).failed(plan.ErrTimeout)},
			want:    Linearizable, ops: 1,
		},
		{
			name:    "txn writes like put",
			history: []Entry{put(0, "a", 0, 1), txn(0, "b", 2, 3), get(1, "b", 4, 5)},
			want:    Linearizable, ops: 3,
		},
		{
			name:    "range is not modelled",
			history: []Entry{put(0, "a", 0, 1), entry(1, plan.OpRange, "", false, 2, 3)},
			want:    Linearizable, ops: 1,
		},
		{
			name:    "delete then absent",
			history: []Entry{put(0, "a", 0, 1), del(1, 2, 3), getAbsent(0, 4, 5), put(0, "b", 6, 7), get(1, "b", 8, 9)},
			want:    Linearizable, ops: 5,
		},
		{
			name:    "value read after acknowledged delete",
			history: []Entry{put(0, "a", 0, 1), del(1, 2, 3), get(0, "a", 4, 5)},
			want:    Violation, ops: 3, offended: []string{"k"},
		},
		{
			name:    "absent read after acknowledged put",
			history: []Entry{put(0, "a", 0, 1), getAbsent(0, 2, 3)},
			want:    Violation, ops: 2, offended: []string{"k"},
		},
		{
			name:    "timed-out delete may apply",
			history: []Entry{put(0, "a", 0, 1), del(0, 2, 3).failed(plan.ErrTimeout), get(1, "a", 4, 5), getAbsent(1, 6, 7)},
			want:    Linearizable, ops: 4,
		},
		{
			name: "only the bad key offends",
			history: []Entry{
				put(0, "a", 0, 1).on("good"), get(1, "a", 2, 3).on("good"),
				put(0, "a", 0, 1).on("bad"), put(0, "b", 2, 3).on("bad"), get(1, "a", 4, 5).on("bad"),
			},
			want: Violation, ops: 5, offended: []string{"bad"},
		},
		{
			name: "client ids of different workloads do not mix",
			// Same ClientID, overlapping in time: two clients, not one.
			history: []Entry{put(0, "a", 0, 10).by("w1"), put(0, "b", 1, 5).by("w2"), get(1, "a", 11, 12).by("w1")},
			want:    Linearizable, ops: 3,
		},
		{
			name: "empty history",
			want: Linearizable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			viz := filepath.Join(t.TempDir(), "linearizability.html")
			got, err := CheckLinearizable(context.Background(), tt.history, time.Minute, viz)
			if err != nil {
				t.Fatalf("CheckLinearizable: %v", err)
			}
			if got.Verdict != tt.want || got.Operations != tt.ops {
				t.Fatalf("got verdict %q on %d ops, want %q on %d (detail: %s)", got.Verdict, got.Operations, tt.want, tt.ops, got.Detail)
			}
			_, statErr := os.Stat(viz)
			if tt.want != Violation {
				if got.Visualization != "" || statErr == nil || len(got.Offending) != 0 {
					t.Errorf("visualization %q (stat: %v), offending %v; want none on %s", got.Visualization, statErr, got.Offending, tt.want)
				}
				return
			}
			if got.Visualization != viz || statErr != nil {
				t.Errorf("visualization %q (stat: %v), want %q written", got.Visualization, statErr, viz)
			}
			keys := map[string]bool{}
			for _, e := range got.Offending {
				keys[e.Key] = true
			}
			if len(keys) != len(tt.offended) {
				t.Errorf("offending keys %v, want %v", keys, tt.offended)
			}
			for _, k := range tt.offended {
				if !keys[k] || !strings.Contains(got.Detail, fmt.Sprintf("%q", k)) {
					t.Errorf("offending keys %v, detail %q: want key %q in both", keys, got.Detail, k)
				}
			}
		})
	}
}

func TestCheckLinearizableNoVisualizationPath(t *testing.T) {
	got, err := CheckLinearizable(context.Background(), []Entry{put(0, "a", 0, 1), get(1, "b", 2, 3)}, 0, "")
	if err != nil || got.Verdict != Violation || got.Visualization != "" {
		t.Fatalf("got %+v, %v; want a violation and no visualization", got, err)
	}
}

func TestCheckLinearizableVisualizationError(t *testing.T) {
	viz := filepath.Join(t.TempDir(), "missing", "viz.html")
	got, err := CheckLinearizable(context.Background(), []Entry{put(0, "a", 0, 1), get(1, "b", 2, 3)}, 0, viz)
	if err == nil || got.Verdict != Violation {
		t.Fatalf("got %+v, %v; want the violation and an error", got, err)
	}
}

func TestCheckLinearizableMalformed(t *testing.T) {
	_, err := CheckLinearizable(context.Background(), []Entry{put(0, "a", 5, 1)}, 0, "")
	if err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("got error %v, want one naming the key", err)
	}
}

// hardHistory is not linearizable, and proving it takes a search through
// every order of n concurrent puts and n concurrent reads: the last read,
// after all of them, sees a value nobody wrote.
func hardHistory(n int) []Entry {
	var h []Entry
	for i := range n {
		v := fmt.Sprint("v", i)
		h = append(h, put(i, v, 0, 1000), get(n+i, v, 0, 1000))
	}
	return append(h, get(0, "never", 2000, 2001))
}

// refusedWrites is a put, n puts that failed as unavailable in quick
// succession, as a closed loop sends them during an election, and a read
// of the first put's value.
func refusedWrites(n int) []Entry {
	h := []Entry{put(0, "a", 0, 1)}
	for i := range n {
		at := 2 + 2*i
		h = append(h, put(i%8, fmt.Sprint("refused", i), at, at+1).failed(plan.ErrUnavailable))
	}
	at := 2 + 2*n
	return append(h, get(9, "a", at, at+1), put(0, "c", at+2, at+3))
}

func TestCheckLinearizableUnknown(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	soon, cancel3 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel3()
	tests := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		history []Entry
	}{
		{"cancelled context", cancelled, time.Minute, []Entry{put(0, "a", 0, 1), get(1, "a", 2, 3)}},
		{"expired deadline", expired, 0, []Entry{put(0, "a", 0, 1), get(1, "a", 2, 3)}},
		{"timeout on a hard history", context.Background(), 50 * time.Millisecond, hardHistory(24)},
		{"deadline on a hard history", soon, time.Hour, hardHistory(24)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			viz := filepath.Join(t.TempDir(), "viz.html")
			start := time.Now()
			got, err := CheckLinearizable(tt.ctx, tt.history, tt.timeout, viz)
			if err != nil {
				t.Fatalf("CheckLinearizable: %v", err)
			}
			if got.Verdict != Unknown || got.Visualization != "" {
				t.Fatalf("got %+v, want unknown and no visualization", got)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v to give up", d)
			}
		})
	}
}
