package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

// freshEnv carries a freshRun to a child process of this test binary, which
// then runs it instead of the tests.
const freshEnv = "SCENARIO_BENCH_FRESH_RUN"

// oursEnv is what -ours-env adds to the environment of our contenders'
// processes.
var oursEnv []string

func init() {
	flag.Func("ours-env", "NAME=VALUE added to the environment of each fresh process of ours (not etcd's tool's), for experiments such as GODEBUG settings; repeat for more", func(kv string) error {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("%q is not NAME=VALUE", kv)
		}
		oursEnv = append(oursEnv, kv)
		return nil
	})
}

// freshRun is one run of one of our contenders, as handed to a child.
type freshRun struct {
	Contender  string
	Case       string
	LeaderNode int
	LeaderAddr string
	Duration   time.Duration
	Rate       int // the case's rate: the child's flags are its defaults
}

// freshResult is what the child reports of its run. CPU and page faults
// are its parent's to read, for the whole process as for etcd's tool; the
// child adds those of the run alone, between its first send and its last
// answer.
type freshResult struct {
	Requests, Failed int64
	Elapsed          time.Duration
	RPS              float64
	P50, P99         time.Duration
	GC               time.Duration
	RunCPU           time.Duration
	RunFaults        int64
}

func TestMain(m *testing.M) {
	if run := os.Getenv(freshEnv); run != "" {
		if err := freshChild(run, os.NewFile(3, "result")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFresh runs ct in a fresh process of this test binary, so that every
// run of ours starts as every run of etcd's tool does and as a `scenario
// run` does: with the runtime's first heap, whose pages the kernel may back
// with huge pages, and nothing faulted in by an earlier contender. Its CPU
// and page faults are the whole process's, as etcd's tool's are: start,
// dial, run and exit.
func runFresh(ctx context.Context, ct contender, c putCase, leader stores.Endpoint, d time.Duration) (measurement, error) {
	run, err := json.Marshal(freshRun{Contender: ct.name, Case: c.name, LeaderNode: leader.Node, LeaderAddr: leader.ClientAddr, Duration: d, Rate: c.rate})
	if err != nil {
		return measurement{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return measurement{}, fmt.Errorf("%s in a fresh process: %w", ct.name, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return measurement{}, fmt.Errorf("%s in a fresh process: %w", ct.name, err)
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, self)
	// gctrace as for etcd's tool, so that both processes' collections are
	// told by the same accounting.
	cmd.Env = withGCTrace(append(append(append(os.Environ(), oursEnv...), ct.env...), freshEnv+"="+string(run)))
	cmd.ExtraFiles = []*os.File{w}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		w.Close()
		return measurement{}, fmt.Errorf("%s in a fresh process: %w", ct.name, err)
	}
	w.Close()
	out, rerr := io.ReadAll(r)
	if err := errors.Join(cmd.Wait(), rerr); err != nil {
		return measurement{}, fmt.Errorf("%s in a fresh process: %w\n%s", ct.name, err, lastLines(withoutGCTrace(stderr.String()), 20))
	}
	var res freshResult
	if err := json.Unmarshal(out, &res); err != nil {
		return measurement{}, fmt.Errorf("%s in a fresh process: its result %q: %w", ct.name, out, err)
	}
	return measurement{
		requests: res.Requests, failed: res.Failed, elapsed: res.Elapsed, rps: res.RPS,
		p50: res.P50, p99: res.P99, gc: res.GC,
		usage:  childUsage(cmd.ProcessState),
		runCPU: res.RunCPU, runFaults: res.RunFaults,
		heap: tracedGC(stderr.Bytes()),
	}, nil
}

// freshChild runs the freshRun encoded in run and writes its freshResult
// to out.
func freshChild(run string, out *os.File) error {
	var fr freshRun
	if err := json.Unmarshal([]byte(run), &fr); err != nil {
		return fmt.Errorf("%s: %w", freshEnv, err)
	}
	cs := allContenders(binaries{})
	i := slices.IndexFunc(cs, func(ct contender) bool { return ct.name == fr.Contender && !ct.external })
	cases := casesToRun(fr.Rate)
	j := slices.IndexFunc(cases, func(c putCase) bool { return c.name == fr.Case })
	if i < 0 || j < 0 {
		return fmt.Errorf("%s: no contender %q of ours or no case %q", freshEnv, fr.Contender, fr.Case)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	leader := stores.Endpoint{Node: fr.LeaderNode, ClientAddr: fr.LeaderAddr}
	m, err := withGCBudget(ctx, cs[i].gcBudget, func() (measurement, error) { return cs[i].run(ctx, leader, cases[j], fr.Duration) })
	if err != nil {
		return err
	}
	res, err := json.Marshal(freshResult{
		Requests: m.requests, Failed: m.failed, Elapsed: m.elapsed, RPS: m.rps,
		P50: m.p50, P99: m.p99, GC: m.gc, RunCPU: m.cpu, RunFaults: m.faults,
	})
	if err != nil {
		return err
	}
	_, err = out.Write(res)
	return errors.Join(err, out.Close())
}

// TestRunFreshReportsChildFailure runs a contender that the child does not
// know: the child must fail, and runFresh must say why in its error.
func TestRunFreshReportsChildFailure(t *testing.T) {
	_, err := runFresh(t.Context(), contender{name: "no such contender"}, putCases[0], stores.Endpoint{Node: 1, ClientAddr: "127.0.0.1:1"}, time.Second)
	if err == nil {
		t.Fatal("runFresh of an unknown contender succeeded")
	}
	if want := `no contender "no such contender"`; !strings.Contains(err.Error(), want) {
		t.Fatalf("runFresh's error %q does not say %s", err, want)
	}
}
