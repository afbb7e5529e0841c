//go:build linux

package etcd

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// integrationVersion is the etcd the integration test runs;
// SCENARIO_ETCD_TEST_VERSION overrides it (e.g. 3.6.16).
func integrationVersion() string {
	if v := os.Getenv("SCENARIO_ETCD_TEST_VERSION"); v != "" {
		return strings.TrimPrefix(v, "v")
	}
	return "3.5.17"
}

// logWriter turns Install's progress lines into test log lines.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testCluster is a real etcd cluster of child processes on loopback.
type testCluster struct {
	t     *testing.T
	spec  plan.ClusterSpec
	eps   []stores.Endpoint
	procs map[int]*exec.Cmd // live members by node
	logs  map[int]string
}

// startCluster starts spec.Nodes members of bin on free loopback ports with
// data in a temp dir. Cleanup kills and reaps every member before the temp
// dir is removed.
func startCluster(t *testing.T, bin string, spec plan.ClusterSpec) *testCluster {
	t.Helper()
	dir := t.TempDir() // registered first, so removed after the kill below
	c := &testCluster{t: t, spec: spec, procs: map[int]*exec.Cmd{}, logs: map[int]string{}}
	addrs := storetest.FreeAddrs(t, 2*spec.Nodes)
	for i := 1; i <= spec.Nodes; i++ {
		c.eps = append(c.eps, stores.Endpoint{Node: i, ClientAddr: addrs[2*i-2], PeerAddr: addrs[2*i-1]})
	}
	t.Cleanup(func() {
		for _, n := range slices.Sorted(maps.Keys(c.procs)) {
			c.kill(n)
		}
		if t.Failed() {
			for n := 1; n <= spec.Nodes; n++ {
				b, _ := os.ReadFile(c.logs[n])
				t.Logf("log of %s (last 3 KiB):\n%s", plan.NodeName(n), storetest.Tail(b, 3072))
			}
		}
	})
	for i := 1; i <= spec.Nodes; i++ {
		logPath := filepath.Join(dir, plan.NodeName(i)+".log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, Args(spec, i, c.eps, filepath.Join(dir, plan.NodeName(i)))...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// Should the test binary die without its cleanups, the members
		// die with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err = cmd.Start()
		logFile.Close() // the child has its own descriptor
		if err != nil {
			t.Fatalf("start %s: %v", plan.NodeName(i), err)
		}
		c.procs[i] = cmd
		c.logs[i] = logPath
	}
	return c
}

// kill SIGKILLs node n and reaps it.
func (c *testCluster) kill(n int) { storetest.Kill(c.t, c.procs, n) }

func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds etcd " + integrationVersion() + " from its Go module on first use (about a minute) and runs a 3-node cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	version := integrationVersion()
	bin, err := Install(ctx, InstallOptions{Version: version, Progress: logWriter{t}})
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("etcd Version: "+version)) {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}

	spec := plan.ClusterSpec{
		Name: "it", Store: plan.StoreEtcd, Version: version, Nodes: 3,
		Etcd: &plan.EtcdKnobs{
			HeartbeatInterval: plan.Duration(100 * time.Millisecond),
			ElectionTimeout:   plan.Duration(time.Second),
			SnapshotCount:     10000,
		},
	}
	c := startCluster(t, bin, spec)
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}

	for _, consistency := range []string{ConsistencyLinearizable, ConsistencySerializable} {
		t.Run("ops/"+consistency, func(t *testing.T) { exerciseOps(t, ctx, c.eps, consistency) })
	}
	t.Run("keywatch", func(t *testing.T) { storetest.KeyWatcherContract(t, ctx, Driver(), c.eps) })
	t.Run("metrics", func(t *testing.T) { serverMetricsContract(t, ctx, c.eps) })

	poller, err := NewStatusPoller(c.eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	// Polled rather than asked once: on a busy machine a member may miss
	// heartbeats and call an election between two checks.
	var old int
	storetest.WaitFor(t, ctx, 30*time.Second, "exactly one leader that every member names", func() string {
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
		old = ls[0]
		return ""
	})
	t.Run("pollnode", func(t *testing.T) { storetest.PollNodeContract(t, ctx, poller, len(c.eps)) })

	// A leadership transfer, which the kill below follows: it takes the
	// new leader.
	t.Run("transfer", func(t *testing.T) {
		old, _ = storetest.TransferContract(t, ctx, Driver(), c.eps, old, 0)
	})
	t.Run("transfer to a paused node", func(t *testing.T) {
		storetest.TransferToPausedContract(t, ctx, Driver(), c.eps, old, storetest.Pauser(t, c.procs))
	})

	// A client made before the kill, with a timeout well below the
	// election timeout: an op sent right after the leader dies cannot
	// succeed, because no member can elect a new leader that soon.
	// It declares retries = 0, so that each refusal is an error, and
	// require_leader = true, so that a member without a leader refuses;
	// dflt requires a leader too, with clientv3's default retries.
	once := plan.WorkloadSpec{Client: plan.ClientSpec{Retries: new(0), RequireLeader: new(true)}}
	lin, err := NewClient(ctx, stores.ClientOptions{Endpoints: c.eps, Conns: 3, Timeout: 300 * time.Millisecond, Workload: once})
	if err != nil {
		t.Fatal(err)
	}
	defer lin.Close()
	dflt, err := NewClient(ctx, stores.ClientOptions{Endpoints: c.eps, Conns: 1, Timeout: 300 * time.Millisecond, Workload: plan.WorkloadSpec{Client: plan.ClientSpec{RequireLeader: new(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer dflt.Close()
	// plain sends no require-leader metadata (the default, require_leader
	// = false), as a service using clientv3 without WithRequireLeader does.
	noLeaderNeeded := plan.WorkloadSpec{Client: plan.ClientSpec{Retries: new(0)}}
	plain, err := NewClient(ctx, stores.ClientOptions{Endpoints: c.eps, Conns: 1, Timeout: 300 * time.Millisecond, Workload: noLeaderNeeded})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	// Do keeps a deadline already on its context (ctx has the test's), so
	// each op here gets its own, as the runner's engine gives it.
	within := func(cli stores.Client, op stores.Op) stores.Result {
		octx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		return cli.Do(octx, op)
	}
	// The workload engine's way: no deadline, the caller cancels at the
	// timeout (stores.WithCallerTimeout), so the driver adds none either.
	timedByCaller := func(cli stores.Client, op stores.Op) stores.Result {
		octx, cancel := context.WithCancel(stores.WithCallerTimeout(context.Background()))
		defer cancel()
		stop := time.AfterFunc(300*time.Millisecond, cancel)
		defer stop.Stop()
		return cli.Do(octx, op)
	}
	storetest.WaitFor(t, ctx, 10*time.Second, "put before the kill", func() string {
		if res := within(lin, stores.Op{Kind: plan.OpPut, Key: "failover/before", Value: []byte("1")}); res.Err != nil {
			return res.Err.Error()
		}
		return ""
	})

	// The earliest a survivor can be elected: a member campaigns, and
	// grants a vote (check-quorum), only after an election timeout's worth
	// of its own ticks without a heartbeat. The last heartbeat may have
	// come one interval before the kill, and the first tick after it at
	// once, so that is two intervals short of the timeout after the kill.
	// A cold CI run saw a leader 938 ms after a kill with a 1 s timeout.
	earliest := spec.Etcd.ElectionTimeout.D() - 2*spec.Etcd.HeartbeatInterval.D()
	killed := time.Now()
	c.kill(old)
	t.Logf("killed leader n%d", old)
	for i, kind := range []string{plan.OpPut, plan.OpGet, plan.OpTxn, plan.OpPut} {
		send := within
		if i == 3 {
			kind, send = "caller-timed "+kind, timedByCaller
		}
		res := send(lin, stores.Op{Kind: strings.TrimPrefix(kind, "caller-timed "), Key: "failover/during", Value: []byte("2")})
		switch {
		case res.Err == nil && time.Since(killed) < earliest:
			t.Errorf("%s succeeded %s after the leader was killed, before any election could finish", kind, time.Since(killed))
		case res.Err != nil && !slices.Contains([]string{plan.ErrTimeout, plan.ErrUnavailable, plan.ErrConnection}, res.Class):
			t.Errorf("%s without a leader: %v classified %q", kind, res.Err, res.Class)
		default:
			t.Logf("%s right after the kill: class %q: %v", kind, res.Class, res.Err)
		}
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
			if s.Node != old && s.Leader != ls[0] {
				return fmt.Sprintf("n%d names n%d", s.Node, s.Leader)
			}
		}
		newLeader = ls[0]
		return ""
	})
	t.Logf("n%d leads %s after the kill", newLeader, time.Since(killed).Round(time.Millisecond))
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	if _, err := TransferLeader(tctx, c.eps, old); err == nil || !strings.Contains(err.Error(), plan.NodeName(old)+", to lead, did not answer") {
		t.Errorf("TransferLeader to the killed n%d: %v; want an error naming it", old, err)
	}
	tcancel()

	// The old client recovers on its own once a leader is back (the test
	// may retry; the client never does), and a new client can be made
	// while a member is down.
	storetest.WaitFor(t, ctx, 10*time.Second, "put through the old client after failover", func() string {
		if res := within(lin, stores.Op{Kind: plan.OpPut, Key: "failover/after", Value: []byte("3")}); res.Err != nil {
			return res.Err.Error()
		}
		return ""
	})
	ser, err := NewClient(ctx, stores.ClientOptions{Endpoints: c.eps, Conns: 2, Consistency: ConsistencySerializable, Timeout: time.Second})
	if err != nil {
		t.Fatalf("NewClient with a member down: %v", err)
	}
	defer ser.Close()

	// Down to one member: no quorum, and once that member has noticed, it
	// knows no leader and campaigns (Electing). Then linearizable ops are
	// refused as unavailable (the client requires a leader) while
	// serializable reads still work.
	var survivor int
	for n := range c.procs {
		if n != newLeader {
			survivor = n
		}
	}
	c.kill(newLeader)
	storetest.WaitFor(t, ctx, 30*time.Second, "the survivor notices it has no leader", func() string {
		for _, s := range poller.Poll(ctx, time.Second) {
			if s.Node == survivor && (s.Err != nil || s.Leader != 0 || !s.Electing) {
				return fmt.Sprintf("n%d: %+v", survivor, s)
			}
		}
		return ""
	})
	// This also shows that retries = 0 holds: clientv3's interceptor
	// re-sends these Unavailable answers to reads until the op's
	// deadline, turning them into timeouts, as it does with its default.
	for _, kind := range []string{plan.OpPut, plan.OpGet, plan.OpRange, plan.OpDelete, plan.OpTxn} {
		res := within(lin, stores.Op{Kind: kind, Key: "failover/", Value: []byte("4")})
		if res.Err == nil || res.Class != plan.ErrUnavailable {
			t.Errorf("linearizable %s on a lone member: %v, class %q; want unavailable", kind, res.Err, res.Class)
		}
		res = timedByCaller(lin, stores.Op{Kind: kind, Key: "failover/", Value: []byte("4")})
		if res.Err == nil || res.Class != plan.ErrUnavailable {
			t.Errorf("linearizable %s on a lone member, timed out by the caller: %v, class %q; want unavailable", kind, res.Err, res.Class)
		}
	}
	// Without the metadata the lone member does not refuse: it holds a
	// write until a leader comes (raft takes no proposal without one)
	// and a linearizable read until it gets a read index, so both end at
	// their timeout, as plain clientv3's would. With the metadata added
	// whatever the setting, both would be refused as unavailable.
	for _, kind := range []string{plan.OpPut, plan.OpGet} {
		res := timedByCaller(plain, stores.Op{Kind: kind, Key: "failover/", Value: []byte("4")})
		if res.Err == nil || res.Class != plan.ErrTimeout {
			t.Errorf("linearizable %s on a lone member with the default require_leader (false): %v, class %q; want timeout", kind, res.Err, res.Class)
		}
	}
	for kind, want := range map[string]string{plan.OpPut: plan.ErrUnavailable, plan.OpGet: plan.ErrTimeout} {
		res := within(dflt, stores.Op{Kind: kind, Key: "failover/", Value: []byte("4")})
		if res.Err == nil || res.Class != want {
			t.Errorf("linearizable %s on a lone member with clientv3's retries: %v, class %q; want %s", kind, res.Err, res.Class, want)
		}
	}
	storetest.WaitFor(t, ctx, 10*time.Second, "serializable read on a lone member", func() string {
		res := ser.Do(ctx, stores.Op{Kind: plan.OpGet, Key: "failover/after"})
		if res.Err != nil || !res.Found || string(res.Value) != "3" {
			return fmt.Sprintf("%+v", res)
		}
		return ""
	})
	if sts := Status(ctx, c.eps, time.Second); len(storetest.Leaders(sts)) != 0 {
		t.Errorf("a leader without quorum: %+v", sts)
	}
}

// exerciseOps runs every op kind through a fresh client.
func exerciseOps(t *testing.T, ctx context.Context, eps []stores.Endpoint, consistency string) {
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: 3, Consistency: consistency, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	p := "ops/" + consistency + "/"
	// The client learns the members' IDs in the background: until then
	// it cannot name the member that answered.
	storetest.WaitFor(t, ctx, 10*time.Second, "the answering member is named", func() string {
		if res := cli.Do(ctx, stores.Op{Kind: plan.OpGet, Key: p}); res.Err != nil || res.Node == 0 {
			return fmt.Sprintf("%+v", res)
		}
		return ""
	})
	served, sent := map[int]bool{}, 0
	do := func(op stores.Op) stores.Result {
		t.Helper()
		op.Client = sent // spread the ops over the connections
		sent++
		res := cli.Do(ctx, op)
		if res.Err != nil {
			t.Fatalf("%s %q: %v (class %s)", op.Kind, op.Key, res.Err, res.Class)
		}
		storetest.CheckServed(t, res, eps)
		served[res.Node] = true
		return res
	}
	defer func() {
		if len(served) < 2 {
			t.Errorf("ops served by %v; want several members (the connections balance over all)", served)
		}
	}()
	// A serializable read may be answered by a member that has not applied
	// the latest write yet; a linearizable one may not.
	read := func(op stores.Op, ok func(stores.Result) bool) {
		t.Helper()
		if consistency == ConsistencyLinearizable {
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
	if res := do(stores.Op{Kind: plan.OpRange, Key: p, Limit: 1}); res.Count != 1 {
		t.Errorf("range with limit 1 returned %d keys", res.Count)
	}

	if res := do(stores.Op{Kind: plan.OpTxn, Key: p + "a", Value: []byte("txn")}); !res.Found {
		t.Errorf("txn on an existing key took the else branch")
	}
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return string(r.Value) == "txn" })
	if res := do(stores.Op{Kind: plan.OpTxn, Key: p + "new", Value: []byte("fresh")}); res.Found {
		t.Errorf("txn on a new key took the then branch")
	}
	read(stores.Op{Kind: plan.OpGet, Key: p + "new"}, func(r stores.Result) bool { return r.Found && string(r.Value) == "fresh" })

	do(stores.Op{Kind: plan.OpDelete, Key: p + "a"})
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return !r.Found })
	read(stores.Op{Kind: plan.OpRange, Key: p}, func(r stores.Result) bool { return r.Count == 3 }) // b, c, new
}
