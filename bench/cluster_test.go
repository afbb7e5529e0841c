package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordlab/scenario/internal/proc"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/etcd"
)

// etcdVersion is the etcd both tools are measured against; the benchmark tool
// is built from the same release so that both speak the same client library.
const etcdVersion = "3.5.17"

// binaries are the etcd server and etcd's benchmark tool; with -breakdown
// also the tool rebuilt against our versions of the libraries under etcd's
// client (ourLibraries).
type binaries struct {
	server, benchmark, benchmarkOurLibs string
}

// libraryModules are the modules under etcd's client whose versions this
// module chooses for itself (newer than etcd 3.5.17's release asks for).
var libraryModules = []string{"google.golang.org/grpc", "golang.org/x/net", "google.golang.org/protobuf"}

// ourLibraries is libraryModules at the versions this module builds with,
// as module@version queries, from the go command run in this package's
// directory.
func ourLibraries(ctx context.Context) ([]string, error) {
	args := append([]string{"list", "-m", "-f", "{{.Path}}@{{.Version}}"}, libraryModules...)
	out, err := exec.CommandContext(ctx, "go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	libs := strings.Fields(string(out))
	if len(libs) != len(libraryModules) {
		return nil, fmt.Errorf("go %s: got %q, want one line per module", strings.Join(args, " "), out)
	}
	return libs, nil
}

// installBinaries builds (or finds cached) the server and the benchmark tool.
// Install takes a file lock, so a concurrent install by another process is
// waited for rather than raced.
func installBinaries(ctx context.Context, b *testing.B) (binaries, error) {
	opts := etcd.InstallOptions{Version: etcdVersion, Progress: logWriter{b}}
	server, err := etcd.Install(ctx, opts)
	if err != nil {
		return binaries{}, fmt.Errorf("etcd server %s: %w", etcdVersion, err)
	}
	opts.Symbols = *toolSymbols
	bench, err := etcd.InstallBenchmark(ctx, opts)
	if err != nil {
		return binaries{}, fmt.Errorf("etcd benchmark tool %s (go.etcd.io/etcd/v3/tools/benchmark): %w", etcdVersion, err)
	}
	bins := binaries{server: server, benchmark: bench}
	if !*breakdown {
		return bins, nil
	}
	if opts.Upgrade, err = ourLibraries(ctx); err != nil {
		return binaries{}, fmt.Errorf("etcd benchmark tool against our libraries: %w", err)
	}
	if bins.benchmarkOurLibs, err = etcd.InstallBenchmark(ctx, opts); err != nil {
		return binaries{}, fmt.Errorf("etcd benchmark tool %s against %s: %w", etcdVersion, strings.Join(opts.Upgrade, ", "), err)
	}
	return bins, nil
}

// logWriter turns progress lines into benchmark log lines.
type logWriter struct{ b *testing.B }

func (w logWriter) Write(p []byte) (int, error) {
	w.b.Log(string(p))
	return len(p), nil
}

// cluster is a 3-node etcd cluster of child processes on loopback.
type cluster struct {
	run *process.Run
	eps []stores.Endpoint
	// threads are the members' threads, for their CPU's wait (see use).
	threads []*proc.ThreadReader
}

// startCluster starts a 3-member cluster of bin with etcd's default knobs and
// waits until it has a leader every member agrees on. On error, everything
// started is stopped again.
func startCluster(ctx context.Context, bin string) (_ *cluster, err error) {
	run, err := process.NewRun(process.RunOptions{})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	c := &cluster{run: run}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.close())
		}
	}()
	spec := plan.ClusterSpec{Name: "bench", Store: plan.StoreEtcd, Version: etcdVersion, Nodes: 3}
	ports, err := run.AllocatePorts(2 * spec.Nodes)
	if err != nil {
		return c, fmt.Errorf("start cluster: allocate ports: %w", err)
	}
	for i := 1; i <= spec.Nodes; i++ {
		c.eps = append(c.eps, stores.Endpoint{
			Node:       i,
			ClientAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*(i-1)])),
			PeerAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*(i-1)+1])),
		})
	}
	for i := 1; i <= spec.Nodes; i++ {
		name := plan.NodeName(i)
		dataDir, _ := run.NodeDir(name)
		n, err := run.AddNode(name, process.NodeSpec{Path: bin, Args: etcd.Args(spec, i, c.eps, dataDir)})
		if err != nil {
			return c, fmt.Errorf("start cluster: %w", err)
		}
		if err := n.Start(ctx); err != nil {
			return c, fmt.Errorf("start cluster: %w", err)
		}
		c.threads = append(c.threads, proc.NewThreadReader("/proc", n.PID()))
	}
	if err := etcd.WaitReady(ctx, c.eps, time.Minute); err != nil {
		return c, fmt.Errorf("start cluster (node logs under %s): %w", run.Dir(), err)
	}
	return c, nil
}

// leader returns the endpoint of the member that says it leads. Both tools
// send to the leader only, as etcd's own performance guide does for writes
// (--target-leader): the server does the same work for either tool, with no
// follower forwarding that one tool's balancing would see more of.
func (c *cluster) leader(ctx context.Context) (stores.Endpoint, error) {
	for _, st := range etcd.Status(ctx, c.eps, 5*time.Second) {
		if st.Err == nil && st.IsLeader {
			for _, ep := range c.eps {
				if ep.Node == st.Node {
					return ep, nil
				}
			}
		}
	}
	return stores.Endpoint{}, errors.New("no member says it is the leader")
}

// reset compacts away every revision but the latest and defragments every
// member, so that each run starts from the same state: without it, every
// put of every earlier run stays in etcd's in-memory index and backend,
// and each run would be slower than the one before, a drift that would
// fall on whichever tool happens to run later.
func (c *cluster) reset(ctx context.Context) (err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: clientURLs(c.eps), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("reset cluster: %w", err)
	}
	defer func() { err = errors.Join(err, cli.Close()) }()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := cli.Get(ctx, "probe")
	if err != nil {
		return fmt.Errorf("reset cluster: read revision: %w", err)
	}
	if rev := resp.Header.Revision; rev > 1 {
		// Compacting to a revision already compacted fails; nothing
		// has been written since the last reset then, so skip it.
		if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			return fmt.Errorf("reset cluster: compact to %d: %w", rev, err)
		}
	}
	for _, u := range clientURLs(c.eps) {
		if _, err := cli.Defragment(ctx, u); err != nil {
			return fmt.Errorf("reset cluster: defragment %s: %w", u, err)
		}
	}
	return nil
}

func clientURLs(eps []stores.Endpoint) []string {
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = "http://" + ep.ClientAddr
	}
	return urls
}

// use is what every member has used since it started, summed: CPU, and
// the time its threads waited for a CPU while runnable. Around a run, it
// says what the cluster spent on each tool's requests: the client and the
// members share the cores, so a client that makes the members work harder
// for the same puts (more reads of fewer requests each, say) leaves them
// less throughput whatever its own CPU.
func (c *cluster) use() (u clusterUse, err error) {
	for _, t := range c.threads {
		p, err := metrics.ReadProcess(t.PID(), t)
		if err != nil {
			return u, fmt.Errorf("cluster's use: %w", err)
		}
		u.cpu += p.CPU
		u.wait += max(p.Wait, 0)
		reads, writes, err := syscallCounts(t.PID())
		if err != nil {
			return u, fmt.Errorf("cluster's use: %w", err)
		}
		u.reads += reads
		u.writes += writes
	}
	return u, nil
}

// clusterUse is what the members have used, summed: CPU, the time their
// threads waited for a CPU, and their read and write system calls (on
// sockets and files alike).
type clusterUse struct {
	cpu, wait     time.Duration
	reads, writes int64
}

// since is u less what was used at before.
func (u clusterUse) since(before clusterUse) clusterUse {
	return clusterUse{cpu: u.cpu - before.cpu, wait: u.wait - before.wait, reads: u.reads - before.reads, writes: u.writes - before.writes}
}

// syscallCounts reads the read and write system calls process pid has made,
// from /proc/PID/io (which needs the right to trace it: root, or its user).
func syscallCounts(pid int) (reads, writes int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		name, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch name {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes, nil
}

// close stops every member and removes the cluster's data.
func (c *cluster) close() error {
	for _, t := range c.threads {
		t.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.run.Close(ctx)
}

// ourLibraries names each library module once, at a version.
func TestOurLibraries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	libs, err := ourLibraries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, lib := range libs {
		path, version, ok := strings.Cut(lib, "@")
		if !ok || path != libraryModules[i] || !strings.HasPrefix(version, "v") {
			t.Errorf("library %d is %q, want %s@<version>", i, lib, libraryModules[i])
		}
	}
}
