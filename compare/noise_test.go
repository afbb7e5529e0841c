package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestMeasureNoise(t *testing.T) {
	const p99 = "phase.steady.put.p99"
	evenly := map[string][]any{
		p99:                       {12.0, 10.0, 14.0, 11.0, 13.0},
		"phase.steady.throughput": {1000.0, 980.0, 1010.0, 990.0, 1020.0},
		"phase.steady.put.count":  {5000.0, 4900.0, 5050.0, 4950.0, 5100.0}, // not gated
		"run.linearizable":        {true, true, true, true, true},           // not a number
	}
	tests := []struct {
		name    string
		metrics map[string][]any
		opts    NoiseOptions
		rows    []string
		check   func(t *testing.T, z *Noise)
		err     string
	}{
		{name: "gated metrics", metrics: evenly, rows: []string{"phase.steady.put.p99", "phase.steady.throughput"},
			check: func(t *testing.T, z *Noise) {
				r := z.Rows[0]
				// Past a shift of 3 ms only the pair (14, 10) stays out of
				// order: p = 4/252; past 2 ms three pairs do: p = 14/252.
				if r.Median != 12 || r.Min != 10 || r.Max != 14 || r.MDE == nil || *r.MDE != 3 || math.Abs(*r.MDEPct-25) > 1e-9 {
					t.Errorf("p99 row %+v", r)
				}
				if math.Abs(r.IQR-8.0/3) > 1e-9 { // R8 quartiles of 10..14: 10.67 and 13.33
					t.Errorf("IQR %v", r.IQR)
				}
				if r.CV == nil || math.Abs(*r.CV-0.131761569) > 1e-6 { // sd 1.58 / mean 12
					t.Errorf("CV %v", r.CV)
				}
				// The default +50%,5ms allows 6 ms at 12 ms: the gate
				// flags what passes it, which the MDE (3 ms) allows.
				if r.Tolerance != "+50%,5ms" || *r.Allowance != 6 || *r.Gate != 6 {
					t.Errorf("tolerance %q allowance %v gate %v", r.Tolerance, *r.Allowance, *r.Gate)
				}
				if z.N != 5 || math.Abs(z.MinP-2.0/252) > 1e-12 || z.NeedN != 4 || len(z.Warnings) != 0 {
					t.Errorf("noise %+v", z)
				}
			}},
		{name: "every number with all", metrics: evenly, opts: NoiseOptions{All: true},
			rows: []string{"phase.steady.put.count", "phase.steady.put.p99", "phase.steady.throughput"}},
		{name: "only", metrics: evenly, opts: NoiseOptions{Only: []string{"*.throughput"}}, rows: []string{"phase.steady.throughput"}},
		{name: "a tighter tolerance than the noise allows", metrics: evenly, opts: NoiseOptions{Rules: []Rule{mustRule(t, "*.p99=+10%")}},
			rows: []string{"phase.steady.put.p99", "phase.steady.throughput"},
			check: func(t *testing.T, z *Noise) {
				if r := z.Rows[0]; math.Abs(*r.Allowance-1.2) > 1e-9 || *r.Gate != 3 {
					t.Errorf("allowance %v gate %v, want 1.2 and the MDE, 3", *r.Allowance, *r.Gate)
				}
			}},
		{name: "three repetitions cannot reach 0.05", metrics: map[string][]any{p99: {10.0, 11.0, 12.0}}, rows: []string{p99},
			check: func(t *testing.T, z *Noise) {
				if z.Rows[0].MDE != nil || z.Rows[0].Gate != nil || len(z.Warnings) != 1 || !strings.Contains(z.Warnings[0], "repeat at least 4 times") {
					t.Errorf("MDE %v, warnings %q", z.Rows[0].MDE, z.Warnings)
				}
			}},
		{name: "one repetition", metrics: map[string][]any{p99: {10.0}}, err: "repeat the scenario at least twice"},
		{name: "only matching nothing", metrics: evenly, opts: NoiseOptions{Only: []string{"phase.nope.*"}}, err: `--only "phase.nope.*" matches no metric`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, err := MeasureNoise(aggregate(tt.metrics), tt.opts)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range z.Rows {
				got = append(got, r.Metric)
			}
			if strings.Join(got, " ") != strings.Join(tt.rows, " ") {
				t.Fatalf("rows %q, want %q", got, tt.rows)
			}
			if tt.check != nil {
				tt.check(t, z)
			}
		})
	}
}

func TestNoiseOutput(t *testing.T) {
	z, err := MeasureNoise(aggregate(map[string][]any{"phase.steady.put.p99": {12.0, 10.0, 14.0, 11.0, 13.0}}), NoiseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := z.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^5 repetitions; alpha 0\.05: an N vs N Mann-Whitney test reaches p = 0\.0079 at best$`,
		`(?m)^metric +n +median +IQR +min \.\. max +CV +MDE +tolerance +gate$`,
		`(?m)^phase\.steady\.put\.p99 +5 +12\.0 ms +2\.67 ms +10\.0 ms \.\. 14\.0 ms +13\.2% +3\.00 ms \(25%\) +\+50%,5ms +6\.00 ms \(50%\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(text.String()) {
			t.Errorf("output lacks %s:\n%s", re, text.String())
		}
	}
	var js bytes.Buffer
	if err := z.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Noise
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 1 || back.Rows[0].MDE == nil || *back.Rows[0].MDE != 3 || back.Alpha != 0.05 {
		t.Errorf("JSON round trip: %s", js.String())
	}
}
