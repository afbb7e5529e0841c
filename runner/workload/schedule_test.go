package workload

import (
	"slices"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

func openLoad(from, to float64, d time.Duration) plan.LoadSpec {
	return plan.LoadSpec{Mode: plan.LoadOpen, RateFrom: from, RateTo: to, Duration: plan.Duration(d)}
}

func TestArrivals(t *testing.T) {
	tests := []struct {
		name string
		load plan.LoadSpec
		want []time.Duration
	}{
		{
			name: "constant 200/s for 20ms",
			load: openLoad(200, 200, 20*time.Millisecond),
			want: []time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond, 15 * time.Millisecond},
		},
		{
			name: "constant 3/s rounds to the nanosecond",
			load: openLoad(3, 3, time.Second),
			want: []time.Duration{0, 333333333, 666666667},
		},
		{
			name: "ramp from zero: t_k = sqrt(k/c)",
			load: openLoad(0, 10, 2*time.Second),
			want: []time.Duration{0, 632455532, 894427191, 1095445115, 1264911064,
				1414213562, 1549193338, 1673320053, 1788854382, 1897366596},
		},
		{
			name: "ramp down to zero stops before the end",
			load: openLoad(10, 0, 2*time.Second),
			want: []time.Duration{0, 102633404, 211145618, 326679947, 450806662,
				585786438, 735088936, 904554885, 1105572809, 1367544468},
		},
		{
			name: "rate below one per duration",
			load: openLoad(0.5, 0.5, time.Second),
			want: []time.Duration{0},
		},
		{name: "zero rate", load: openLoad(0, 0, time.Second), want: nil},
		{name: "negative rate", load: openLoad(-1, 5, time.Second), want: nil},
		{name: "no duration", load: openLoad(100, 100, 0), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Arrivals(tt.load)
			var got []time.Duration
			for {
				at, ok := s.Next()
				if !ok {
					break
				}
				got = append(got, at)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("arrivals\n got %v\nwant %v", got, tt.want)
			}
			if n := Arrivals(tt.load).Len(); n != int64(len(tt.want)) {
				t.Errorf("Len() = %d, want %d", n, len(tt.want))
			}
		})
	}
}

func TestArrivalsRamp(t *testing.T) {
	s := Arrivals(openLoad(100, 300, time.Second))
	// N(1s) = (100+300)/2 = 200 arrivals.
	if n := s.Len(); n != 200 {
		t.Fatalf("Len() = %d, want 200", n)
	}
	for _, c := range []struct {
		k    int64
		want time.Duration
	}{{0, 0}, {1, 9901951}, {2, 19615242}, {100, 618033989}, {199, 996662955}} {
		if got, ok := s.At(c.k); !ok || got != c.want {
			t.Errorf("At(%d) = %v, %v; want %v", c.k, got, ok, c.want)
		}
	}
	if _, ok := s.At(200); ok {
		t.Error("At(200) exists; the ramp has 200 arrivals")
	}
	prev := time.Duration(-1)
	for k, at := range s.All() {
		if at <= prev {
			t.Fatalf("arrival %d at %v is not after %v", k, at, prev)
		}
		prev = at
	}
}

func TestArrivalsLongConstantIsExact(t *testing.T) {
	// Summing 1/rate intervals would drift; the closed form must not.
	s := Arrivals(openLoad(1000, 1000, time.Hour))
	if n := s.Len(); n != 3_600_000 {
		t.Fatalf("Len() = %d, want 3600000", n)
	}
	if at, _ := s.At(3_599_999); at != time.Hour-time.Millisecond {
		t.Errorf("last arrival at %v, want %v", at, time.Hour-time.Millisecond)
	}
}

func TestClientSteps(t *testing.T) {
	closed := func(from, to int, d time.Duration) plan.LoadSpec {
		return plan.LoadSpec{Mode: plan.LoadClosed, ClientsFrom: from, ClientsTo: to, Duration: plan.Duration(d)}
	}
	tests := []struct {
		name string
		load plan.LoadSpec
		want []ClientStep
	}{
		{name: "constant", load: closed(5, 5, time.Minute), want: []ClientStep{{0, 5}}},
		{
			name: "ramp up from zero",
			load: closed(0, 4, 4*time.Second),
			want: []ClientStep{{0, 0}, {time.Second, 1}, {2 * time.Second, 2}, {3 * time.Second, 3}},
		},
		{
			name: "ramp down",
			load: closed(10, 5, 5*time.Second),
			want: []ClientStep{{0, 10}, {time.Second, 9}, {2 * time.Second, 8}, {3 * time.Second, 7}, {4 * time.Second, 6}},
		},
		{
			name: "uneven steps truncate to the nanosecond",
			load: closed(1, 4, time.Second),
			want: []ClientStep{{0, 1}, {333333333, 2}, {666666666, 3}},
		},
		{name: "one step lands on the end", load: closed(0, 1, time.Second), want: []ClientStep{{0, 0}}},
		{
			name: "more clients than nanoseconds merge steps",
			load: closed(0, 4, 2),
			want: []ClientStep{{0, 1}, {1, 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClientSteps(tt.load); !slices.Equal(got, tt.want) {
				t.Errorf("ClientSteps\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}
