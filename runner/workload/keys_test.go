package workload

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func testSpec() plan.WorkloadSpec {
	return plan.WorkloadSpec{
		Name: "w", Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 1}},
		KeySize: 16, ValueSize: 32, Keyspace: 1000, KeyPrefix: "/s/w/",
		Distribution: plan.DistUniform, Seed: 42, Clients: 4, RangeLimit: 10,
	}
}

func TestKeyspaceKey(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		size   int
		n      int64
		i      int64
		want   string
	}{
		{name: "padded with leading zeros", prefix: "/k/", size: 8, n: 1000, i: 42, want: "/k/00042"},
		{name: "exactly wide enough", prefix: "/k/", size: 6, n: 1000, i: 7, want: "/k/007"},
		{name: "largest index", prefix: "/k/", size: 6, n: 1000, i: 999, want: "/k/999"},
		{name: "one key", prefix: "p", size: 2, n: 1, i: 0, want: "p0"},
		{name: "no prefix", prefix: "", size: 4, n: 10, i: 3, want: "0003"},
		{name: "longer than the stack buffer", prefix: "x", size: 70, n: 10, i: 9, want: "x" + strings.Repeat("0", 68) + "9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec()
			spec.KeyPrefix, spec.KeySize, spec.Keyspace = tt.prefix, tt.size, tt.n
			ks, err := NewKeyspace(spec)
			if err != nil {
				t.Fatal(err)
			}
			got := ks.Key(tt.i)
			if got != tt.want {
				t.Errorf("Key(%d) = %q, want %q", tt.i, got, tt.want)
			}
			if len(got) != tt.size {
				t.Errorf("len = %d, want %d", len(got), tt.size)
			}
			if i, ok := ks.Index(got); !ok || i != tt.i {
				t.Errorf("Index(%q) = %d, %v; want %d", got, i, ok, tt.i)
			}
		})
	}
}

func TestKeysSortInIndexOrder(t *testing.T) {
	spec := testSpec()
	ks, _ := NewKeyspace(spec)
	keys := make([]string, spec.Keyspace)
	for i := range keys {
		keys[i] = ks.Key(int64(i))
	}
	if !slices.IsSorted(keys) {
		t.Error("keys are not in index order")
	}
}

func TestNewKeyspaceRejects(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*plan.WorkloadSpec)
		errHas string
	}{
		{name: "key too short", edit: func(s *plan.WorkloadSpec) { s.KeyPrefix, s.KeySize, s.Keyspace = "/k/", 5, 1000 }, errHas: "need at least 6 bytes"},
		{name: "empty keyspace", edit: func(s *plan.WorkloadSpec) { s.Keyspace = 0 }, errHas: "keyspace must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec()
			tt.edit(&spec)
			_, err := NewKeyspace(spec)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestNewGeneratorRejects(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*plan.WorkloadSpec)
		id     int
		errHas string
	}{
		{name: "zipf_s not above 1", edit: func(s *plan.WorkloadSpec) { s.Distribution, s.ZipfS = plan.DistZipfian, 0.9 }, errHas: "zipf_s"},
		{name: "unknown distribution", edit: func(s *plan.WorkloadSpec) { s.Distribution = "hot" }, errHas: "unknown distribution"},
		{name: "empty mix", edit: func(s *plan.WorkloadSpec) { s.Mix = nil }, errHas: "no positive weight"},
		{name: "unknown op", edit: func(s *plan.WorkloadSpec) { s.Mix = []plan.OpWeight{{Op: "cas", Weight: 1}} }, errHas: "unknown operation"},
		{name: "negative weight", edit: func(s *plan.WorkloadSpec) { s.Mix = []plan.OpWeight{{Op: "put", Weight: -1}} }, errHas: "finite number"},
		{name: "reserved id", edit: func(*plan.WorkloadSpec) {}, id: PreloadWriter, errHas: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec()
			tt.edit(&spec)
			_, err := NewGenerator(spec, tt.id)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func mustGen(t testing.TB, spec plan.WorkloadSpec, id int) *Generator {
	t.Helper()
	g, err := NewGenerator(spec, id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSequentialCoversKeyspace(t *testing.T) {
	spec := testSpec()
	spec.Distribution = plan.DistSequential
	g := mustGen(t, spec, 0)
	seen := make([]int, spec.Keyspace)
	for k := range spec.Keyspace {
		i := g.NextIndex()
		if i != k {
			t.Fatalf("draw %d gave index %d; generator 0 walks in order from 0", k, i)
		}
		seen[i]++
	}
	if i := g.NextIndex(); i != 0 {
		t.Errorf("after a full lap got %d, want a wrap to 0", i)
	}
}

// TestSequentialSharedByWorkers: the generators of one workload, as an
// engine's workers hold them, draw from one walk of the keyspace in order,
// however they take turns, as etcd's tool's --sequential-keys does; so the
// ops they have in flight together sit on neighbouring keys. Before, each
// started its own walk from a point spread over the keyspace.
func TestSequentialSharedByWorkers(t *testing.T) {
	spec := testSpec()
	spec.Distribution = plan.DistSequential
	cfg, err := newGenConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	gens := []*Generator{newGenerator(cfg, 0), newGenerator(cfg, 1), newGenerator(cfg, 2)}
	var got []int64
	for _, turn := range []int{0, 1, 1, 2, 0, 2, 2, 1} {
		got = append(got, gens[turn].NextIndex())
	}
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("indexes in turn %v, want %v", got, want)
	}
	// Concurrent workers draw every index of a lap exactly once.
	cfg, err = newGenConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]atomic.Int32, spec.Keyspace)
	var wg sync.WaitGroup
	for id := range 4 {
		g := newGenerator(cfg, id)
		wg.Go(func() {
			for range spec.Keyspace / 4 {
				seen[g.NextIndex()].Add(1)
			}
		})
	}
	wg.Wait()
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("index %d drawn %d times in one lap of 4 workers, want once", i, n)
		}
	}
	// Another workload (another engine) walks from 0 on its own.
	if i := mustGen(t, spec, 5).NextIndex(); i != 0 {
		t.Errorf("a new workload's first index is %d, want 0", i)
	}
	// Engines of one workload on several machines (load-worker pods, whose
	// generator ids start at multiples of IDStride) start spread over the
	// keyspace, golden-ratio spaced, so their ops in flight do not meet.
	var starts []int64
	for pod := range 4 {
		e, _ := newTestEngine(t, spec, newFakeStore(0), WithFirstID(pod*IDStride))
		starts = append(starts, e.slots.get().gen.NextIndex())
	}
	if want := []int64{0, 618, 236, 854}; !slices.Equal(starts, want) {
		t.Errorf("engines' first indexes %v, want %v", starts, want)
	}
}

func TestUniformCoversKeyspace(t *testing.T) {
	spec := testSpec()
	spec.Keyspace = 100
	g := mustGen(t, spec, 0)
	counts := make([]int, spec.Keyspace)
	for range 100_000 {
		counts[g.NextIndex()]++
	}
	for i, c := range counts {
		if c < 700 || c > 1300 { // expect 1000 each
			t.Errorf("key %d drawn %d times in 100000, want about 1000", i, c)
		}
	}
}

func TestZipfianSkew(t *testing.T) {
	spec := testSpec()
	spec.Distribution = plan.DistZipfian // ZipfS 0: the 1.1 default
	g := mustGen(t, spec, 0)
	counts := make([]int, spec.Keyspace)
	for range 100_000 {
		counts[g.NextIndex()]++
	}
	top := counts[0]
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if top < 10*max(median, 1) {
		t.Errorf("hottest key drawn %d times, median %d: want a strong skew", top, median)
	}
	if slices.Max(counts) != top {
		t.Errorf("key 0 is not the hottest: %d < %d", top, slices.Max(counts))
	}
}

func TestMixProportions(t *testing.T) {
	spec := testSpec()
	spec.Mix = []plan.OpWeight{{Op: plan.OpPut, Weight: 0.6}, {Op: plan.OpGet, Weight: 0.3}, {Op: plan.OpDelete, Weight: 0.05}, {Op: plan.OpRange, Weight: 0.05}}
	g := mustGen(t, spec, 3)
	const n = 100_000
	counts := map[string]int{}
	for range n {
		op := g.NextOp()
		counts[op.Kind]++
		switch op.Kind {
		case plan.OpPut:
			if len(op.Value) != spec.ValueSize {
				t.Fatalf("put value of %d bytes, want %d", len(op.Value), spec.ValueSize)
			}
		case plan.OpRange:
			if op.End != "/s/w0" || op.Limit != spec.RangeLimit {
				t.Fatalf("range end %q limit %d, want the prefix end /s/w0 and %d", op.End, op.Limit, spec.RangeLimit)
			}
		default:
			if op.Value != nil {
				t.Fatalf("%s carries a value", op.Kind)
			}
		}
	}
	for _, m := range spec.Mix {
		got := float64(counts[m.Op]) / n
		if math.Abs(got-m.Weight) > 0.01 {
			t.Errorf("%s: %.3f of ops, want %.2f±0.01", m.Op, got, m.Weight)
		}
	}
}

func draw(g *Generator, n int) []stores.Op {
	ops := make([]stores.Op, n)
	for i := range ops {
		ops[i] = g.NextOp()
	}
	return ops
}

func sameOps(a, b []stores.Op) bool {
	return slices.EqualFunc(a, b, func(x, y stores.Op) bool {
		return x.Kind == y.Kind && x.Key == y.Key && string(x.Value) == string(y.Value)
	})
}

func TestGeneratorsAreReproducible(t *testing.T) {
	for _, dist := range []string{plan.DistSequential, plan.DistUniform, plan.DistZipfian} {
		t.Run(dist, func(t *testing.T) {
			spec := testSpec()
			spec.Distribution = dist
			spec.Mix = []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}}
			a, b := draw(mustGen(t, spec, 1), 500), draw(mustGen(t, spec, 1), 500)
			if !sameOps(a, b) {
				t.Error("same seed and id gave different streams")
			}
			if sameOps(a, draw(mustGen(t, spec, 2), 500)) {
				t.Error("generators 1 and 2 gave the same stream")
			}
			spec.Seed++
			if sameOps(a, draw(mustGen(t, spec, 1), 500)) {
				t.Error("seeds 42 and 43 gave the same stream")
			}
		})
	}
}

func TestValuesAreTaggedAndUnique(t *testing.T) {
	spec := testSpec()
	g := mustGen(t, spec, 7)
	seen := map[string]bool{}
	for seq := range uint64(1000) {
		v := g.NextValue()
		if seen[string(v)] {
			t.Fatalf("value %x repeated", v)
		}
		seen[string(v)] = true
		w, s, ok := ParseValue(v)
		if !ok || w != 7 || s != seq {
			t.Fatalf("ParseValue = %d, %d, %v; want 7, %d, true", w, s, ok, seq)
		}
	}
	spec.ValueSize = 3
	if v := mustGen(t, spec, 0).NextValue(); len(v) != ValueTagSize {
		t.Errorf("a %d-byte value_size gave %d bytes, want the %d-byte tag", spec.ValueSize, len(v), ValueTagSize)
	}
	if _, _, ok := ParseValue([]byte("short")); ok {
		t.Error("ParseValue accepted a value shorter than a tag")
	}
}

func TestAppendValueLayout(t *testing.T) {
	tests := []struct {
		name string
		size int
		want string
	}{
		{name: "tag then filler", size: 12, want: "\x00\x00\x01\x00\x00\x00\x00\x02ijkl"},
		{name: "filler wraps", size: 30, want: "\x00\x00\x01\x00\x00\x00\x00\x02ijklmnopqrstuvwxyzabcd"},
		{name: "too small for the tag", size: 2, want: "\x00\x00\x01\x00\x00\x00\x00\x02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendValue(nil, tt.size, 1, 2)); got != tt.want {
				t.Errorf("AppendValue = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"/a/": "/a0", "a\xff": "b", "\xff\xff": "", "": ""} {
		if got := prefixEnd(in); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}
