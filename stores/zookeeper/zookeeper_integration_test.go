//go:build linux

package zookeeper

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// testEnsemble is a real ZooKeeper ensemble of child processes on
// loopback.
type testEnsemble struct {
	t     *testing.T
	inst  Install
	spec  plan.ClusterSpec
	dir   string
	eps   []stores.Endpoint
	procs map[int]*exec.Cmd // live nodes by node
}

// startEnsemble starts spec.Nodes nodes on free loopback ports (client,
// quorum, election) with data in a temp dir. Cleanup kills and reaps every
// node before the temp dir is removed, and prints the logs' tails if the
// test failed.
func startEnsemble(t *testing.T, inst Install, spec plan.ClusterSpec) *testEnsemble {
	t.Helper()
	e := &testEnsemble{t: t, inst: inst, spec: spec, dir: t.TempDir(), procs: map[int]*exec.Cmd{}}
	addrs := storetest.FreeAddrs(t, 3*spec.Nodes)
	for i := 1; i <= spec.Nodes; i++ {
		e.eps = append(e.eps, stores.Endpoint{
			Node: i, ClientAddr: addrs[3*i-3], PeerAddr: addrs[3*i-2], Extra: []string{addrs[3*i-1]},
		})
	}
	t.Cleanup(func() {
		for _, n := range slices.Sorted(maps.Keys(e.procs)) {
			e.kill(n)
		}
		if t.Failed() {
			for n := 1; n <= spec.Nodes; n++ {
				b, _ := os.ReadFile(e.logPath(n))
				t.Logf("log of %s (last 3 KiB):\n%s", plan.NodeName(n), storetest.Tail(b, 3072))
			}
		}
	})
	for i := 1; i <= spec.Nodes; i++ {
		e.start(i)
	}
	return e
}

func (e *testEnsemble) logPath(n int) string {
	return filepath.Join(e.dir, plan.NodeName(n)+".log")
}

// start starts node n over its data directory, appending to its log.
func (e *testEnsemble) start(n int) {
	e.t.Helper()
	path, args, err := Command(e.inst, e.spec, n, e.eps, filepath.Join(e.dir, plan.NodeName(n)))
	if err != nil {
		e.t.Fatalf("Command(%s): %v", plan.NodeName(n), err)
	}
	logFile, err := os.OpenFile(e.logPath(n), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Should the test binary die without its cleanups, the nodes die
	// with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	logFile.Close() // the child has its own descriptor
	if err != nil {
		e.t.Fatalf("start %s: %v", plan.NodeName(n), err)
	}
	e.procs[n] = cmd
}

// kill SIGKILLs node n and reaps it.
func (e *testEnsemble) kill(n int) {
	cmd, ok := e.procs[n]
	if !ok {
		return
	}
	delete(e.procs, n)
	if err := cmd.Process.Kill(); err != nil {
		e.t.Errorf("kill %s: %v", plan.NodeName(n), err)
	}
	_ = cmd.Wait() // "signal: killed" is the expected outcome
}

func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs a 3-node ZooKeeper ensemble")
	}
	inst, err := Find("", "")
	if err != nil {
		t.Skipf("ZooKeeper is not installed (apt-get install zookeeper): %v", err)
	}
	t.Logf("ZooKeeper %s, java %s, class path %s", inst.Version, inst.Java, inst.ClassPath)
	if _, err := Find("", "0.0.1"); err == nil || !strings.Contains(err.Error(), inst.Version) {
		t.Errorf("Find of a version that is not installed: %v; want an error naming the installed %s", err, inst.Version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	spec := plan.ClusterSpec{
		Name: "it", Store: plan.StoreZooKeeper, Version: inst.Version, Nodes: 3,
		ZooKeeper: &plan.ZooKeeperKnobs{
			TickTime:       plan.Duration(500 * time.Millisecond),
			InitLimit:      20,
			SyncLimit:      10,
			SnapCount:      10000,
			MaxClientCnxns: 200,
			JVMHeap:        128 << 20,
		},
	}
	started := time.Now()
	e := startEnsemble(t, inst, spec)
	if err := WaitReady(ctx, e.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	t.Logf("3-node ensemble ready %s after starting the JVMs", time.Since(started).Round(time.Millisecond))
	checkListeners(t, e)

	for _, consistency := range []string{ConsistencyLocal, ConsistencySync} {
		t.Run("ops/"+consistency, func(t *testing.T) { exerciseOps(t, ctx, e.eps, consistency) })
	}
	t.Run("throughput", func(t *testing.T) { throughput(t, ctx, e.eps) })
	t.Run("keywatch", func(t *testing.T) { storetest.KeyWatcherContract(t, ctx, Driver(), e.eps) })
	t.Run("metrics", func(t *testing.T) { serverMetricsContract(t, ctx, e.eps) })

	poller, err := NewStatusPoller(e.eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	// After the writes above every follower has applied a transaction of
	// the leader's epoch, so all of them report it.
	var old int
	storetest.WaitFor(t, ctx, 30*time.Second, "exactly one leader that every node names, in one epoch", func() string {
		sts := poller.Poll(ctx, 2*time.Second)
		ls := storetest.Leaders(sts)
		if len(ls) != 1 {
			return fmt.Sprintf("leaders %v in %+v", ls, sts)
		}
		for _, s := range sts {
			if s.Err != nil || s.Leader != ls[0] || s.Term == 0 || s.Term != sts[ls[0]-1].Term {
				return fmt.Sprintf("status of n%d: %+v; want leader n%d and its term in %+v", s.Node, s, ls[0], sts)
			}
		}
		old = ls[0]
		return ""
	})
	t.Run("pollnode", func(t *testing.T) { storetest.PollNodeContract(t, ctx, poller, len(e.eps)) })

	// One session per node, so that some ops go to the dying leader.
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: e.eps, Conns: 3, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for c := range 3 {
		if res := cli.Do(ctx, stores.Op{Kind: plan.OpPut, Key: "failover/before", Value: []byte("1"), Client: c}); res.Err != nil {
			t.Fatalf("put before the kill through session %d: %v", c, res.Err)
		}
	}

	killed := time.Now()
	e.kill(old)
	t.Logf("killed leader n%d", old)

	// Writes through every session until one succeeds on each: what the
	// workload sees during the election.
	classes := map[string]int{}
	var firstWrite time.Duration
	recovered := map[int]bool{}
	for i := 0; len(recovered) < 3; i++ {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no write succeeded on every session within 30 s of the kill; errors by class %v", classes)
		}
		c := i % 3
		res := cli.Do(ctx, stores.Op{Kind: plan.OpPut, Key: fmt.Sprintf("failover/during/%d", i), Value: []byte("2"), Client: c})
		if res.Err == nil {
			if firstWrite == 0 {
				firstWrite = time.Since(killed)
			}
			recovered[c] = true
			continue
		}
		classes[res.Class]++
		if classes[res.Class] <= 3 {
			t.Logf("%s after the kill, session %d: class %q: %v", time.Since(killed).Round(time.Millisecond), c, res.Class, res.Err)
		}
		if !slices.Contains([]string{plan.ErrTimeout, plan.ErrUnavailable, plan.ErrConnection}, res.Class) {
			t.Errorf("put during the election: %v classified %q", res.Err, res.Class)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("first write %s after the kill, every session writing after %s; errors by class %v",
		firstWrite.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), classes)

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
	t.Logf("n%d leads; polled %s after the kill", newLeader, time.Since(killed).Round(time.Millisecond))

	// A client can be made while a node is down, and reads what was
	// written.
	fresh, err := NewClient(ctx, stores.ClientOptions{Endpoints: e.eps, Conns: 2, Consistency: ConsistencySync, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("NewClient with a node down: %v", err)
	}
	defer fresh.Close()
	for c := range 2 {
		res := fresh.Do(ctx, stores.Op{Kind: plan.OpGet, Key: "failover/before", Client: c})
		if res.Err != nil || !res.Found || string(res.Value) != "1" {
			t.Errorf("sync get through session %d with a node down: %+v", c, res)
		}
	}

	// The killed node restarts over its data and rejoins as a follower.
	restarted := time.Now()
	e.start(old)
	if err := WaitReady(ctx, e.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady after restarting n%d: %v", old, err)
	}
	t.Logf("n%d rejoined %s after its restart", old, time.Since(restarted).Round(time.Millisecond))
	res := fresh.Do(ctx, stores.Op{Kind: plan.OpRange, Key: "failover/"})
	if res.Err != nil || res.Count < 2 {
		t.Errorf("range over the failover keys after the restart: %+v", res)
	}

	// Down to one node: no quorum. It stops serving, names no leader, is
	// looking for one (Electing), and operations fail with a connection
	// error or time out.
	for _, n := range slices.Collect(maps.Keys(e.procs)) {
		if n != old {
			e.kill(n)
		}
	}
	storetest.WaitFor(t, ctx, 30*time.Second, "the survivor stops serving", func() string {
		for _, s := range poller.Poll(ctx, time.Second) {
			if s.Node == old && (s.Err != nil || s.Leader != 0 || s.IsLeader || !s.Electing) {
				return fmt.Sprintf("n%d: %+v", old, s)
			}
		}
		return ""
	})
	for _, kind := range []string{plan.OpPut, plan.OpGet} {
		res := fresh.Do(ctx, stores.Op{Kind: kind, Key: "failover/none", Value: []byte("3")})
		t.Logf("%s without a quorum: class %q: %v", kind, res.Class, res.Err)
		if res.Err == nil || !slices.Contains([]string{plan.ErrTimeout, plan.ErrConnection}, res.Class) {
			t.Errorf("%s without a quorum: %v, class %q; want a connection error or a timeout", kind, res.Err, res.Class)
		}
	}
}

// exerciseOps runs every op kind through a fresh client, writing through
// one session and reading through another, which usually sits on another
// server.
func exerciseOps(t *testing.T, ctx context.Context, eps []stores.Endpoint, consistency string) {
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: 3, Consistency: consistency, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	p := "ops/" + consistency + "/"
	served := map[int]bool{}
	do := func(op stores.Op) stores.Result {
		t.Helper()
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
			t.Errorf("ops served by %v; want the two sessions' servers", served)
		}
	}()
	// A local read on another server may not have seen the write yet; a
	// read after a sync must have.
	read := func(op stores.Op, ok func(stores.Result) bool) {
		t.Helper()
		op.Client = 1
		if consistency == ConsistencySync {
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
	do(stores.Op{Kind: plan.OpPut, Key: p + "a", Value: []byte("va2")}) // over an existing key
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return r.Found && string(r.Value) == "va2" })
	if res := do(stores.Op{Kind: plan.OpGet, Key: p + "missing"}); res.Found {
		t.Errorf("get of a missing key: %+v", res)
	}
	read(stores.Op{Kind: plan.OpRange, Key: p}, func(r stores.Result) bool { return r.Count == 3 })
	read(stores.Op{Kind: plan.OpRange, Key: p + "a", End: p + "c"}, func(r stores.Result) bool { return r.Count == 2 })
	if res := do(stores.Op{Kind: plan.OpRange, Key: p, Limit: 1}); res.Count != 1 {
		t.Errorf("range with limit 1 returned %d keys", res.Count)
	}

	if res := do(stores.Op{Kind: plan.OpTxn, Key: p + "a", Value: []byte("txn")}); !res.Found {
		t.Errorf("txn on an existing key says it did not exist")
	}
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return string(r.Value) == "txn" })
	if res := do(stores.Op{Kind: plan.OpTxn, Key: p + "new", Value: []byte("fresh")}); res.Found {
		t.Errorf("txn on a new key says it existed")
	}
	read(stores.Op{Kind: plan.OpGet, Key: p + "new"}, func(r stores.Result) bool { return r.Found && string(r.Value) == "fresh" })

	do(stores.Op{Kind: plan.OpDelete, Key: p + "a"})
	do(stores.Op{Kind: plan.OpDelete, Key: p + "a"}) // deleting a missing key succeeds
	read(stores.Op{Kind: plan.OpGet, Key: p + "a"}, func(r stores.Result) bool { return !r.Found })
	read(stores.Op{Kind: plan.OpRange, Key: p}, func(r stores.Result) bool { return r.Count == 3 }) // b, c, new

	// Keys ZooKeeper could not take as names unescaped.
	for _, k := range []string{"", ".", "..", "50%/x", "ü\x00\xff", strings.Repeat("/", 10)} {
		do(stores.Op{Kind: plan.OpPut, Key: p + "odd/" + k, Value: []byte(k)})
		read(stores.Op{Kind: plan.OpGet, Key: p + "odd/" + k}, func(r stores.Result) bool { return r.Found && string(r.Value) == k })
	}
	read(stores.Op{Kind: plan.OpRange, Key: p + "odd/"}, func(r stores.Result) bool { return r.Count == 6 })
}

// throughput measures puts per second from 64 concurrent workload clients
// over 8 sessions, for the log: a smoke number, not a benchmark.
func throughput(t *testing.T, ctx context.Context, eps []stores.Endpoint) {
	cli, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: 8, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const workers, window = 64, 2 * time.Second
	counts := make([]int, workers)
	errs := make([]error, workers)
	value := make([]byte, 256)
	start := time.Now()
	done := make(chan int)
	for w := range workers {
		go func() {
			defer func() { done <- w }()
			for i := 0; time.Since(start) < window; i++ {
				res := cli.Do(ctx, stores.Op{Kind: plan.OpPut, Key: fmt.Sprintf("bench/%d/%d", w, i%100), Value: value, Client: w})
				if res.Err != nil {
					errs[w] = res.Err
					return
				}
				counts[w]++
			}
		}()
	}
	for range workers {
		<-done
	}
	total := 0
	for w := range workers {
		if errs[w] != nil {
			t.Errorf("worker %d: %v", w, errs[w])
		}
		total += counts[w]
	}
	t.Logf("%d puts from %d clients over 8 sessions in %s: %.0f/s", total, workers, window, float64(total)/time.Since(start).Seconds())
}

// checkListeners checks that every node listens only on the addresses it
// was given: its client and election ports, and the quorum port on the
// leader. Nothing on the wildcard address, no AdminServer.
func checkListeners(t *testing.T, e *testEnsemble) {
	t.Helper()
	for n, cmd := range e.procs {
		ep := e.eps[n-1]
		allowed := []string{ep.ClientAddr, ep.PeerAddr, ep.Extra[0]}
		got, err := listeners(cmd.Process.Pid)
		if err != nil {
			t.Errorf("listeners of %s: %v", plan.NodeName(n), err)
			continue
		}
		for _, a := range got {
			if !slices.Contains(allowed, a) {
				t.Errorf("%s listens on %s; want only %v", plan.NodeName(n), a, allowed)
			}
		}
		if !slices.Contains(got, ep.ClientAddr) || !slices.Contains(got, ep.Extra[0]) {
			t.Errorf("%s listens on %v; want its client %s and election %s addresses", plan.NodeName(n), got, ep.ClientAddr, ep.Extra[0])
		}
	}
}

// listeners returns the TCP addresses process pid listens on, read from
// its socket descriptors and /proc/net/tcp{,6}.
func listeners(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			a, err := procAddr(f[1])
			if err != nil {
				return nil, err
			}
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// procAddr decodes /proc/net/tcp's "0100007F:0885" (little-endian 32-bit
// words) into "127.0.0.1:2181"; an IPv4-mapped IPv6 address comes back
// as IPv4, as Java binds 127.0.0.1 on a dual-stack socket.
func procAddr(s string) (string, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	if !ok || err != nil || len(raw)%4 != 0 {
		return "", fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return "", fmt.Errorf("bad port in %q", s)
	}
	ip := net.IP(raw)
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
}
