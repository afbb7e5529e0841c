package results

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteSideBySide(t *testing.T) {
	etcd, zk := sample(), sample()
	etcd.Point = []SweepValue{{Variable: "store", Value: `"etcd"`}}
	etcd.Backend = map[string]string{"store": "etcd 3.5.17"}
	zk.Point = []SweepValue{{Variable: "store", Value: `"zookeeper"`}}
	zk.Backend = map[string]string{"store": "zookeeper 3.8.0"}
	zk.Phases[0].Ops = []OpStats{{Op: "put", Count: 10, OK: 10, Latency: &Latency{P50MS: 2.5, P99MS: 12}}}
	zk.Phases[0].Total.Throughput = 123.4
	zk.Phases = zk.Phases[:1] // no failover phase: its row is left out

	var b bytes.Buffer
	if err := WriteSideBySide(&b, []*Results{etcd, zk}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	want := []string{
		"phase steady",
		`store="zookeeper"  zookeeper 3.8.0     123.4      2.50      12.0`,
		"phase failover",
		"1.50 s", // the longer of the two faults' first writes
		"1/2",    // checks passed
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("comparison lacks %q:\n%s", w, out)
		}
	}
	// The failover table holds one run: etcd's.
	failover := out[strings.Index(out, "phase failover"):]
	if strings.Contains(failover, "zookeeper") || !strings.Contains(failover, "etcd 3.5.17") {
		t.Errorf("failover table should hold etcd only:\n%s", failover)
	}
	if len(lines) < 8 {
		t.Errorf("too short:\n%s", out)
	}
}

// A run with several clusters has a row per cluster, each with its own
// latencies.
func TestWriteSideBySideClusters(t *testing.T) {
	yes, zero := true, int64(0)
	r := Combine([]string{"etcd", "zk"}, []*Results{
		oneCluster("etcd 3.5.17", "e", 100, 5, &yes, &zero),
		oneCluster("zookeeper 3.8.0", "z", 50, 9, &yes, &zero),
	})
	r.Point = []SweepValue{{Variable: "rtt", Value: `"5ms"`}}
	var b bytes.Buffer
	if err := WriteSideBySide(&b, []*Results{r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etcd: etcd 3.5.17", "zk: zookeeper 3.8.0", "9.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, b.String())
		}
	}
}
