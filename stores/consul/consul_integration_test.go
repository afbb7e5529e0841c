//go:build linux

package consul

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// integrationVersion is the Consul the integration test runs;
// SCENARIO_CONSUL_TEST_VERSION overrides it.
func integrationVersion() string {
	if v := os.Getenv("SCENARIO_CONSUL_TEST_VERSION"); v != "" {
		return strings.TrimPrefix(v, "v")
	}
	return DefaultVersion
}

// logWriter turns Install's progress lines into test log lines.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testCluster is a real Consul cluster of child processes on loopback.
type testCluster struct {
	t     *testing.T
	bin   string
	spec  plan.ClusterSpec
	dir   string
	eps   []stores.Endpoint
	procs map[int]*exec.Cmd // live servers by node
	logs  map[int]string
}

// loopbackEndpoints are n nodes on 127.0.0.1 with free ports, three each.
func loopbackEndpoints(t *testing.T, n int) []stores.Endpoint {
	addrs := storetest.FreeAddrs(t, 3*n)
	var eps []stores.Endpoint
	for i := 1; i <= n; i++ {
		a := addrs[3*i-3:]
		eps = append(eps, stores.Endpoint{Node: i, ClientAddr: a[0], PeerAddr: a[1], Extra: []string{a[2]}})
	}
	return eps
}

// startCluster starts a server of bin for each of eps with data in a temp
// dir. Cleanup kills and reaps every server before the temp dir is
// removed, and prints the end of each log if the test failed.
func startCluster(t *testing.T, bin string, spec plan.ClusterSpec, eps []stores.Endpoint) *testCluster {
	t.Helper()
	dir := t.TempDir() // registered first, so removed after the kill below
	c := &testCluster{t: t, bin: bin, spec: spec, dir: dir, eps: eps, procs: map[int]*exec.Cmd{}, logs: map[int]string{}}
	t.Cleanup(func() {
		for _, n := range slices.Sorted(maps.Keys(c.procs)) {
			c.kill(n)
		}
		if t.Failed() {
			for n := 1; n <= spec.Nodes; n++ {
				b, _ := os.ReadFile(c.logs[n])
				t.Logf("log of %s (last 4 KiB):\n%s", plan.NodeName(n), storetest.Tail(b, 4096))
			}
		}
	})
	for i := 1; i <= spec.Nodes; i++ {
		c.start(i)
	}
	return c
}

// start starts node n, appending to its log. With the node's data dir
// from an earlier start it is a restart.
func (c *testCluster) start(n int) {
	c.t.Helper()
	args, err := Args(c.spec, n, c.eps, filepath.Join(c.dir, plan.NodeName(n)))
	if err != nil {
		c.t.Fatalf("Args for %s: %v", plan.NodeName(n), err)
	}
	logPath := filepath.Join(c.dir, plan.NodeName(n)+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Should the test binary die without its cleanups, the servers die
	// with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	logFile.Close() // the child has its own descriptor
	if err != nil {
		c.t.Fatalf("start %s: %v", plan.NodeName(n), err)
	}
	c.procs[n] = cmd
	c.logs[n] = logPath
}

// kill SIGKILLs node n and reaps it.
func (c *testCluster) kill(n int) { storetest.Kill(c.t, c.procs, n) }

func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds consul " + integrationVersion() + " from its Go module on first use (about 4 minutes) and runs a 3-server cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	version := integrationVersion()
	bin := install(t, ctx, version)

	spec := plan.ClusterSpec{
		Name: "it", Store: plan.StoreConsul, Version: version, Nodes: 3,
		Consul: &plan.ConsulKnobs{RaftMultiplier: 1, RaftSnapshotThreshold: 1024},
	}
	started := time.Now()
	c := startCluster(t, bin, spec, loopbackEndpoints(t, spec.Nodes))
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	t.Logf("3 servers started and agreed on a leader in %s", time.Since(started).Round(time.Millisecond))

	for _, consistency := range []string{ConsistencyDefault, ConsistencyConsistent, ConsistencyStale} {
		t.Run("ops/"+consistency, func(t *testing.T) { exerciseOps(t, ctx, c.eps, consistency) })
	}

	t.Run("concurrent", func(t *testing.T) { concurrentPuts(t, ctx, c.eps) })

	t.Run("keywatch", func(t *testing.T) { storetest.KeyWatcherContract(t, ctx, Driver(), c.eps) })
	t.Run("metrics", func(t *testing.T) { serverMetricsContract(t, ctx, c.eps) })

	poller, err := NewStatusPoller(c.eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	var old int
	var oldTerm uint64
	storetest.WaitFor(t, ctx, 30*time.Second, "exactly one leader that every server names", func() string {
		sts := poller.Poll(ctx, 2*time.Second)
		ls := storetest.Leaders(sts)
		if len(ls) != 1 {
			return fmt.Sprintf("leaders %v in %+v", ls, sts)
		}
		for _, s := range sts {
			if s.Err != nil || s.Leader != ls[0] || s.Term == 0 {
				return fmt.Sprintf("status of n%d: %+v; want leader n%d and a term", s.Node, s, ls[0])
			}
		}
		old, oldTerm = ls[0], sts[ls[0]-1].Term
		return ""
	})
	t.Run("pollnode", func(t *testing.T) { storetest.PollNodeContract(t, ctx, poller, len(c.eps)) })

	// A leadership transfer, which the kill below follows: it takes the
	// new leader.
	t.Run("transfer", func(t *testing.T) {
		old, oldTerm = storetest.TransferContract(t, ctx, Driver(), c.eps, old, oldTerm)
	})
	t.Run("transfer to a paused node", func(t *testing.T) {
		storetest.TransferToPausedContract(t, ctx, Driver(), c.eps, old, storetest.Pauser(t, c.procs))
	})

	// Probes that run through the outage: writes and the three read modes,
	// each on a connection to a server that survives, one op at a time,
	// never retried by the client. What they see is logged.
	var survivors []stores.Endpoint
	for _, ep := range c.eps {
		if ep.Node != old {
			survivors = append(survivors, ep)
		}
	}
	type probe struct {
		name string
		op   stores.Op
		cli  stores.Client
	}
	var probes []probe
	for _, p := range []struct {
		name, consistency, kind string
	}{
		{"put", ConsistencyDefault, plan.OpPut},
		{"get default", ConsistencyDefault, plan.OpGet},
		{"get consistent", ConsistencyConsistent, plan.OpGet},
		{"get stale", ConsistencyStale, plan.OpGet},
	} {
		cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: survivors, Conns: 2, Consistency: p.consistency, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		probes = append(probes, probe{p.name, stores.Op{Kind: p.kind, Key: "/failover/probe", Value: []byte("x")}, cli})
	}
	for _, p := range probes {
		storetest.WaitFor(t, ctx, 10*time.Second, p.name+" before the kill", func() string {
			if res := p.cli.Do(ctx, p.op); res.Err != nil {
				return res.Err.Error()
			}
			return ""
		})
	}
	// And a client pinned to the leader about to die.
	var oldEp stores.Endpoint
	for _, ep := range c.eps {
		if ep.Node == old {
			oldEp = ep
		}
	}
	toOld, err := NewClient(ctx, stores.ClientOptions{Endpoints: []stores.Endpoint{oldEp}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer toOld.Close()

	type outcome struct {
		at    time.Duration
		class string
		err   error
	}
	results := make([][]outcome, len(probes))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	killed := time.Now()
	c.kill(old)
	t.Logf("killed leader n%d (term %d)", old, oldTerm)
	for i, p := range probes {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				res := p.cli.Do(ctx, p.op)
				results[i] = append(results[i], outcome{start.Sub(killed), res.Class, res.Err})
				if res.Err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	if res := toOld.Do(ctx, stores.Op{Kind: plan.OpPut, Key: "/failover/old", Value: []byte("1")}); res.Class != plan.ErrConnection {
		t.Errorf("put to the killed leader: %v (class %q), want a connection error", res.Err, res.Class)
	}

	var newLeader int
	storetest.WaitFor(t, ctx, 30*time.Second, "new leader among the survivors", func() string {
		sts := poller.Poll(ctx, time.Second)
		ls := storetest.Leaders(sts)
		if len(ls) != 1 || ls[0] == old {
			return fmt.Sprintf("leaders %v in %+v", ls, sts)
		}
		for _, s := range sts {
			if s.Node == old && s.Err == nil {
				return fmt.Sprintf("killed n%d still answers", old)
			}
			if s.Node != old && (s.Leader != ls[0] || s.Term <= oldTerm) {
				return fmt.Sprintf("n%d: %+v", s.Node, s)
			}
		}
		newLeader = ls[0]
		return ""
	})
	elected := time.Since(killed)
	t.Logf("n%d leads %s after the kill", newLeader, elected.Round(time.Millisecond))

	// Writes succeed again: through a client made now and through the
	// probes made before the kill (the test waits; the clients never
	// retry).
	after, err := NewClient(ctx, stores.ClientOptions{Endpoints: c.eps, Conns: 3, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("NewClient with a server down: %v", err)
	}
	defer after.Close()
	storetest.WaitFor(t, ctx, 15*time.Second, "put after failover", func() string {
		// Client 1 and 2 use connections to n2 and n3 in endpoint order;
		// pick one that goes to a survivor.
		client := survivors[0].Node - 1
		if res := after.Do(ctx, stores.Op{Kind: plan.OpPut, Key: "/failover/after", Value: []byte("3"), Client: client}); res.Err != nil {
			return res.Err.Error()
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond) // let the probes see the recovery
	close(stop)
	wg.Wait()

	for i, p := range probes {
		rs := results[i]
		classes := map[string]int{}
		var lastFail time.Duration = -1
		for _, r := range rs {
			if r.err == nil {
				continue
			}
			classes[r.class]++
			lastFail = r.at
			if !slices.Contains([]string{plan.ErrTimeout, plan.ErrUnavailable, plan.ErrConnection}, r.class) {
				t.Errorf("%s at +%s: %v classified %q", p.name, r.at.Round(time.Millisecond), r.err, r.class)
			}
		}
		if lastFail < 0 {
			t.Logf("%s during the election: %d ops, no failures", p.name, len(rs))
		} else {
			var firstOKAfter time.Duration = -1
			for _, r := range rs {
				if r.err == nil && r.at > lastFail {
					firstOKAfter = r.at
					break
				}
			}
			t.Logf("%s during the election: %d ops, errors by class %v, last failure sent at +%s, first success after it sent at +%s",
				p.name, len(rs), classes, lastFail.Round(time.Millisecond), firstOKAfter.Round(time.Millisecond))
		}
		// Each distinct answer once, ports masked, with when it was first seen.
		seen := map[string]bool{}
		for _, r := range rs {
			if r.err == nil {
				continue
			}
			msg := portRE.ReplaceAllString(r.err.Error(), ":PORT")
			if !seen[msg] {
				seen[msg] = true
				t.Logf("  from +%s: %s: %s", r.at.Round(time.Millisecond), r.class, msg)
			}
		}
		if len(rs) == 0 || rs[len(rs)-1].err != nil {
			t.Errorf("%s did not recover: last of %d results failed", p.name, len(rs))
		}
	}

	// A restart with the same data dir rejoins as the same server, and the
	// cluster is whole again.
	restarted := time.Now()
	c.start(old)
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady after restarting n%d: %v", old, err)
	}
	t.Logf("restarted n%d rejoined in %s", old, time.Since(restarted).Round(time.Millisecond))
	storetest.WaitFor(t, ctx, 15*time.Second, "read through the restarted server", func() string {
		res := toOld.Do(ctx, stores.Op{Kind: plan.OpGet, Key: "/failover/after"})
		if res.Err != nil || !res.Found || string(res.Value) != "3" {
			return fmt.Sprintf("%+v", res)
		}
		return ""
	})

	// Down to one server: no quorum. The survivor campaigns on and on,
	// and says so (the leader timeline reads it as an election under way).
	for _, n := range slices.Sorted(maps.Keys(c.procs)) {
		if n != old {
			c.kill(n)
		}
	}
	storetest.WaitFor(t, ctx, 30*time.Second, "the survivor campaigns", func() string {
		if s := poller.PollNode(ctx, old-1); s.Err != nil || s.IsLeader || s.Leader != 0 || !s.Electing {
			return fmt.Sprintf("n%d: %+v", old, s)
		}
		return ""
	})
}

// install builds (on first use) and checks the Consul under test.
func install(t *testing.T, ctx context.Context, version string) string {
	t.Helper()
	bin, err := Install(ctx, InstallOptions{Version: version, Progress: logWriter{t}})
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Consul v"+version)) {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	return bin
}

// One server per IP address with the fixed ports, as in the runner's
// network namespaces; 127.0.0.0/8 is all loopback on Linux, so three
// addresses there stand in for three hosts.
func TestIntegrationFixedPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds consul on first use and runs a 3-server cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var eps []stores.Endpoint
	for i := 1; i <= 3; i++ {
		ip := fmt.Sprintf("127.0.99.%d", i)
		for _, port := range []int{HTTPPort, ServerPort, SerfLANPort} {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
			if err != nil {
				t.Skipf("%s:%d is not free here: %v", ip, port, err)
			}
			l.Close()
		}
		eps = append(eps, stores.Endpoint{
			Node:       i,
			ClientAddr: net.JoinHostPort(ip, fmt.Sprint(HTTPPort)),
			PeerAddr:   net.JoinHostPort(ip, fmt.Sprint(ServerPort)),
			Extra:      []string{net.JoinHostPort(ip, fmt.Sprint(SerfLANPort))},
		})
	}
	version := integrationVersion()
	bin := install(t, ctx, version)
	spec := plan.ClusterSpec{Name: "fixed", Store: plan.StoreConsul, Version: version, Nodes: 3, Consul: &plan.ConsulKnobs{RaftMultiplier: 1}}
	c := startCluster(t, bin, spec, eps)
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	exerciseOps(t, ctx, c.eps, ConsistencyConsistent)
}

// concurrentPuts sends from 300 workload clients at once over a single
// connection to one server: more concurrent HTTP connections from one
// address than Consul's default limit of 200 per client IP, which the
// config file lifts.
func concurrentPuts(t *testing.T, ctx context.Context, eps []stores.Endpoint) {
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps[:1], Conns: 1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const clients, each = 300, 10
	errs := make(chan error, clients*each)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for j := range each {
				res := cli.Do(ctx, stores.Op{Kind: plan.OpPut, Key: fmt.Sprintf("/concurrent/%03d", (i*each+j)%100), Value: []byte("v"), Client: i})
				if res.Err != nil {
					errs <- fmt.Errorf("%s: %w", res.Class, res.Err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	took := time.Since(start)
	n := 0
	for err := range errs {
		if n++; n <= 3 {
			t.Errorf("concurrent put: %v", err)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d concurrent puts failed", n, clients*each)
	}
	t.Logf("%d puts from %d concurrent clients over one connection to n1 in %s (%.0f/s)", clients*each, clients, took.Round(time.Millisecond), float64(clients*each)/took.Seconds())
}

// exerciseOps runs every op kind through a fresh client.
func exerciseOps(t *testing.T, ctx context.Context, eps []stores.Endpoint, consistency string) {
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: 3, Consistency: consistency, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	p := "/ops/" + consistency + "/"
	n := 0
	do := func(op stores.Op) stores.Result {
		t.Helper()
		op.Client = n // spread the ops over every connection, hence server
		n++
		res := cli.Do(ctx, op)
		if res.Err != nil {
			t.Fatalf("%s %q: %v (class %s)", op.Kind, op.Key, res.Err, res.Class)
		}
		storetest.CheckServed(t, res, eps)
		if want := eps[op.Client%len(eps)].Node; res.Node != want {
			t.Errorf("%s by client %d answered by %s, want %s (its server)", op.Kind, op.Client, plan.NodeName(res.Node), plan.NodeName(want))
		}
		return res
	}
	// A stale read may be answered by a server that has not applied the
	// latest write yet; default and consistent reads go to the leader.
	read := func(op stores.Op, ok func(stores.Result) bool) {
		t.Helper()
		if consistency != ConsistencyStale {
			if res := do(op); !ok(res) {
				t.Fatalf("%s %q: unexpected %+v", op.Kind, op.Key, res)
			}
			return
		}
		storetest.WaitFor(t, ctx, 5*time.Second, op.Kind+" "+op.Key, func() string {
			if res := do(op); !ok(res) {
				return fmt.Sprintf("%+v", res)
			}
			return ""
		})
	}

	for _, k := range []string{"a", "b", "c"} {
		do(stores.Op{Kind: plan.OpPut, Key: p + k, Value: []byte("v" + k)})
	}
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return r.Found && string(r.Value) == "va" })
	if res := do(stores.Op{Kind: plan.OpGet, Key: p + "missing"}); res.Found {
		t.Errorf("get of a missing key: %+v", res)
	}
	read(stores.Op{Kind: plan.OpRange, Key: p}, func(r stores.Result) bool { return r.Count == 3 })
	read(stores.Op{Kind: plan.OpRange, Key: p + "a", End: p + "c"}, func(r stores.Result) bool { return r.Count == 2 })
	read(stores.Op{Kind: plan.OpRange, Key: p + "b", End: strings.TrimSuffix(p, "/") + "0"}, func(r stores.Result) bool { return r.Count == 2 })
	if res := do(stores.Op{Kind: plan.OpRange, Key: p, Limit: 1}); res.Count != 1 {
		t.Errorf("range with limit 1 returned %d keys", res.Count)
	}

	do(stores.Op{Kind: plan.OpTxn, Key: p + "a", Value: []byte("txn")})
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return string(r.Value) == "txn" })
	do(stores.Op{Kind: plan.OpTxn, Key: p + "new", Value: []byte("fresh")})
	read(stores.Op{Kind: plan.OpGet, Key: p + "new"}, func(r stores.Result) bool { return r.Found && string(r.Value) == "fresh" })

	do(stores.Op{Kind: plan.OpDelete, Key: p + "a"})
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return !r.Found })
	read(stores.Op{Kind: plan.OpRange, Key: p}, func(r stores.Result) bool { return r.Count == 3 }) // b, c, new
}

var portRE = regexp.MustCompile(`:[0-9]{2,5}\b`)
