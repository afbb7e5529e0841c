package zookeeper

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// testEndpoints are three nodes out of node order: the server lines must
// not depend on it.
func testEndpoints() []stores.Endpoint {
	return []stores.Endpoint{
		{Node: 3, ClientAddr: "127.0.0.3:2181", PeerAddr: "127.0.0.3:2888", Extra: []string{"127.0.0.3:3888"}},
		{Node: 1, ClientAddr: "127.0.0.1:12181", PeerAddr: "127.0.0.1:12888", Extra: []string{"127.0.0.1:13888"}},
		{Node: 2, ClientAddr: "127.0.0.1:22181", PeerAddr: "127.0.0.1:22888", Extra: []string{"127.0.0.1:23888"}},
	}
}

func TestConfig(t *testing.T) {
	servers := []string{
		"server.1=127.0.0.1:12888:13888",
		"server.2=127.0.0.1:22888:23888",
		"server.3=127.0.0.3:2888:3888",
	}
	base := func(node int, clientHost, clientPort string, limits []string, knobs ...string) []string {
		lines := []string{"# " + plan.NodeName(node) + ` of cluster "main", written by scenario on every start.`}
		lines = append(lines, limits...)
		lines = append(lines, knobs...)
		lines = append(lines,
			"dataDir=/d/data",
			"dataLogDir=/d/datalog",
			"clientPortAddress="+clientHost,
			"clientPort="+clientPort,
			"quorumListenOnAllIPs=false",
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,mntr,ruok,stat,conf",
			"autopurge.purgeInterval=0",
			"standaloneEnabled=false",
		)
		return append(lines, servers...)
	}
	defaults := []string{"tickTime=2000", "initLimit=10", "syncLimit=5"}
	tests := []struct {
		name  string
		knobs *plan.ZooKeeperKnobs
		node  int
		want  []string
	}{
		{"no knobs", nil, 1, base(1, "127.0.0.1", "12181", defaults)},
		{"zero knobs keep defaults", &plan.ZooKeeperKnobs{}, 3, base(3, "127.0.0.3", "2181", defaults)},
		{
			"every knob", &plan.ZooKeeperKnobs{
				TickTime: plan.Duration(500 * time.Millisecond), InitLimit: 20, SyncLimit: 7,
				SnapCount: 5000, MaxClientCnxns: 1000, JVMHeap: 1 << 30,
			}, 2,
			base(2, "127.0.0.1", "22181", []string{"tickTime=500", "initLimit=20", "syncLimit=7"}, "snapCount=5000", "maxClientCnxns=1000"),
		},
		{
			"one knob", &plan.ZooKeeperKnobs{SyncLimit: 2}, 2,
			base(2, "127.0.0.1", "22181", []string{"tickTime=2000", "initLimit=10", "syncLimit=2"}),
		},
		{
			"sub-millisecond tick rounds up", &plan.ZooKeeperKnobs{TickTime: plan.Duration(100*time.Millisecond + 1)}, 1,
			base(1, "127.0.0.1", "12181", []string{"tickTime=101", "initLimit=10", "syncLimit=5"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := plan.ClusterSpec{Name: "main", Store: plan.StoreZooKeeper, Nodes: 3, ZooKeeper: tt.knobs}
			got, err := config(c, tt.node, testEndpoints(), "/d")
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join(tt.want, "\n") + "\n"
			if got != want {
				t.Errorf("config =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestConfigSingleNode(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "[::1]:2181", PeerAddr: "[::1]:2888", Extra: []string{"[::1]:3888"}}}
	got, err := config(plan.ClusterSpec{Name: "one", Nodes: 1}, 1, eps, "/d")
	if err != nil {
		t.Fatal(err)
	}
	// One node runs standalone, ZooKeeper's single-server mode.
	if strings.Contains(got, "standaloneEnabled") {
		t.Errorf("a single node disables standalone mode:\n%s", got)
	}
	for _, want := range []string{"clientPortAddress=::1\n", "clientPort=2181\n", "server.1=[::1]:2888:3888\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}

func TestConfigRejects(t *testing.T) {
	ok := stores.Endpoint{Node: 1, ClientAddr: "127.0.0.1:1", PeerAddr: "127.0.0.1:2", Extra: []string{"127.0.0.1:3"}}
	with := func(f func(*stores.Endpoint)) []stores.Endpoint {
		ep := ok
		f(&ep)
		return []stores.Endpoint{ep}
	}
	tests := []struct {
		name string
		eps  []stores.Endpoint
		node int
		want string
	}{
		{"node not listed", []stores.Endpoint{ok}, 2, "n2 is not among"},
		{"node twice", []stores.Endpoint{ok, ok}, 1, "listed twice"},
		{"node zero", with(func(ep *stores.Endpoint) { ep.Node = 0 }), 0, "out of range"},
		{"no election address", with(func(ep *stores.Endpoint) { ep.Extra = nil }), 1, "leader-election address"},
		{"hosts differ", with(func(ep *stores.Endpoint) { ep.Extra = []string{"127.0.0.2:3"} }), 1, "one host"},
		{"wildcard client", with(func(ep *stores.Endpoint) { ep.ClientAddr = "0.0.0.0:1" }), 1, "wildcard"},
		{"empty client host", with(func(ep *stores.Endpoint) { ep.ClientAddr = ":1" }), 1, "wildcard"},
		{"wildcard peer", with(func(ep *stores.Endpoint) { ep.PeerAddr, ep.Extra = "[::]:2", []string{"[::]:3"} }), 1, "wildcard"},
		{"no port", with(func(ep *stores.Endpoint) { ep.ClientAddr = "127.0.0.1" }), 1, "client address"},
		{"bad port", with(func(ep *stores.Endpoint) { ep.PeerAddr = "127.0.0.1:x" }), 1, "bad port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config(plan.ClusterSpec{Name: "main", Nodes: len(tt.eps)}, tt.node, tt.eps, "/d")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("config: %v; want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	inst := Install{Java: "/usr/bin/java", ClassPath: "/zk/zookeeper.jar:/zk/slf4j-log4j12.jar", Version: "3.8.0"}
	dir := filepath.Join(t.TempDir(), "n2")
	c := plan.ClusterSpec{Name: "main", Nodes: 3, ZooKeeper: &plan.ZooKeeperKnobs{JVMHeap: 256 << 20}}
	// Twice: a restart rewrites the same files over the node's data.
	for range 2 {
		path, args, err := Command(inst, c, 2, testEndpoints(), dir)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"-Xms268435456", "-Xmx268435456",
			"-XX:+ExitOnOutOfMemoryError",
			"-Dlog4j.configuration=file:" + filepath.Join(dir, "log4j.properties"),
			"-Dlogback.configurationFile=" + filepath.Join(dir, "logback.xml"),
			"-cp", inst.ClassPath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain",
			filepath.Join(dir, "zoo.cfg"),
		}
		if path != inst.Java || !slices.Equal(args, want) {
			t.Errorf("Command = %s %q\nwant %s %q", path, args, inst.Java, want)
		}
	}
	for file, want := range map[string]string{
		"zoo.cfg":          "dataDir=" + filepath.Join(dir, "data") + "\n",
		"data/myid":        "2\n",
		"log4j.properties": "log4j.rootLogger=INFO, CONSOLE\n",
		"logback.xml":      `<root level="INFO">`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v; want it to contain %q, got:\n%s", file, err, want, b)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "datalog")); err != nil || !fi.IsDir() {
		t.Errorf("datalog directory: %v", err)
	}

	// Without a heap knob the JVM picks its own.
	_, args, err := Command(inst, plan.ClusterSpec{Name: "main", Nodes: 3}, 1, testEndpoints(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-Xm") }) {
		t.Errorf("heap flags without a jvm_heap knob: %q", args)
	}
	if _, _, err := Command(Install{}, c, 1, testEndpoints(), t.TempDir()); err == nil {
		t.Error("Command without an installation succeeded")
	}
}
