package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

// planted is run() with one of each kind of change: a slower p99, lower
// availability, a slower failover, a faster get, a failed check and gets
// with no latency over the whole run.
func planted() *Diff {
	base, next := run(), run()
	next.RunID = "r2"
	next.Phases[0].Ops[0].Latency.P99MS = 24
	next.Phases[0].Availability = results.Ptr(0.99)
	next.Phases[1].FailoverTimeMS = results.Ptr(2000.0)
	next.Phases[1].Ops[1].Latency.P99MS = 2
	next.Run.Ops[1].Latency = nil
	next.Checks[1].Passed = false
	d, err := Compare(base, next, Options{})
	if err != nil {
		panic(err)
	}
	d.Base.File, d.New.File = "baseline/results.json", "results/new/results.json"
	return d
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := planted().WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	want := `base: baseline/results.json  failover.hcl  run r1  etcd 3.5.17
new:  results/new/results.json  failover.hcl  run r2  etcd 3.5.17

metric                           base      new              change  tolerance      verdict
phase.steady.availability     100.00%   99.00%     -1.00pt (-1.0%)  -0.5pt         REGRESSION
phase.steady.put.p99          12.0 ms  24.0 ms  +12.0 ms (+100.0%)  +50%,5ms       REGRESSION
phase.failover.failover_time   1.00 s   2.00 s   +1.00 s (+100.0%)  +60%,250ms     REGRESSION
check.healthy                    pass     fail                   -  stays passing  REGRESSION
phase.failover.get.p99        8.00 ms  2.00 ms   -6.00 ms (-75.0%)  +50%,5ms       improved

warning: 3 metric(s) missing from NEW, not compared (--strict fails on them):
  run.get.p50  base 2.00 ms
  run.get.p90  base 4.00 ms
  run.get.p99  base 8.00 ms

4 regressed, 1 improved, 54 within tolerance, 3 missing from NEW, 0 only in NEW; 196 not gated
`
	if got := b.String(); got != want {
		t.Errorf("WriteText:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteTextNothingMoved(t *testing.T) {
	d, err := Compare(run(), run(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nno metric moved beyond its tolerance\n") || strings.Contains(b.String(), "verdict") {
		t.Errorf("WriteText of identical runs:\n%s", b.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := planted().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Base      Run             `json:"base"`
		Rows      []Row           `json:"rows"`
		Summary   map[Verdict]int `json:"summary"`
		Regressed bool            `json:"regressed"`
		Warnings  []string        `json:"warnings"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if !got.Regressed || got.Summary[Regression] != 4 || got.Summary[OK] != 54 || got.Summary[Missing] != 3 || got.Warnings == nil {
		t.Errorf("summary %v, regressed %v, warnings %v", got.Summary, got.Regressed, got.Warnings)
	}
	if got.Base.File != "baseline/results.json" || got.Base.Store != "etcd 3.5.17" {
		t.Errorf("base %+v", got.Base)
	}
	r := got.Rows[1]
	if r.Metric != "phase.steady.put.p99" || r.Base != 12.0 || r.New != 24.0 || *r.Change != 12 || *r.ChangePct != 100 || r.Tolerance != "+50%,5ms" || r.Verdict != Regression {
		t.Errorf("row %+v", r)
	}
}
