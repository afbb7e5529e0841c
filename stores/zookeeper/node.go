package zookeeper

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// The ports a node listens on when each node has an address of its own.
const (
	ClientPort   = 2181 // clients and four-letter words
	PeerPort     = 2888 // followers to the leader (quorum)
	ElectionPort = 3888 // leader election
)

// Defaults written when a knob is left at zero. ZooKeeper refuses to run
// an ensemble without initLimit and syncLimit, so "ZooKeeper's default"
// means the values of the zoo_sample.cfg every release ships (and Debian's
// /etc/zookeeper/conf_example), tickTime included: QuorumPeerConfig's own
// fallback of 3000 ms would stretch both limits by half.
const (
	defaultTickTime  = 2000 * time.Millisecond
	defaultInitLimit = 10
	defaultSyncLimit = 5
)

// electionWindow is sync_limit ticks and one more: a follower gives its
// leader up after sync_limit ticks of silence, and the election takes
// about a tick.
func electionWindow(c plan.ClusterSpec) time.Duration {
	tick, syncLimit := defaultTickTime, defaultSyncLimit
	if k := c.ZooKeeper; k != nil && k.TickTime > 0 {
		tick = k.TickTime.D()
	}
	if k := c.ZooKeeper; k != nil && k.SyncLimit > 0 {
		syncLimit = k.SyncLimit
	}
	return time.Duration(syncLimit+1) * tick
}

// fourLetterWords are the commands a node answers: srvr for the status
// poller, mntr for readiness, the rest for people debugging a run.
const fourLetterWords = "srvr,mntr,ruok,stat,conf"

// Files Command writes into a node's directory.
const (
	configFile  = "zoo.cfg"
	log4jFile   = "log4j.properties"
	logbackFile = "logback.xml"
	dataSubdir  = "data"    // snapshots and myid
	logSubdir   = "datalog" // transaction logs
)

// mainClass is what zkServer.sh runs; it falls back to a standalone server
// when the configuration has a single member.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Command writes node's configuration (zoo.cfg, myid, logging) into
// dataDir and returns the command that starts node (1-based) of cluster c,
// whose members are eps. eps[i].ClientAddr is the client address,
// PeerAddr the quorum address and Extra[0] the leader-election address,
// on the same host as PeerAddr. Knobs left at zero in c.ZooKeeper keep
// ZooKeeper's defaults. The node logs at INFO to standard output.
//
// Every file is rewritten on each call, so restarting a node over its
// existing dataDir is the same call; ZooKeeper then recovers from its
// snapshot and transaction log.
func Command(inst Install, c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (path string, args []string, err error) {
	if inst.Java == "" || inst.ClassPath == "" {
		return "", nil, errors.New("zookeeper command: no installation (call Find first)")
	}
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("zookeeper command: %w", err)
	}
	cfg, err := config(c, node, eps, dir)
	if err != nil {
		return "", nil, err
	}
	for _, d := range []string{filepath.Join(dir, dataSubdir), filepath.Join(dir, logSubdir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", nil, fmt.Errorf("zookeeper command for %s: %w", plan.NodeName(node), err)
		}
	}
	files := []struct{ path, content string }{
		{filepath.Join(dir, configFile), cfg},
		// QuorumPeerMain reads the node's id from dataDir/myid.
		{filepath.Join(dir, dataSubdir, "myid"), strconv.Itoa(node) + "\n"},
		{filepath.Join(dir, log4jFile), log4jConfig},
		{filepath.Join(dir, logbackFile), logbackConfig},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.content), 0o644); err != nil {
			return "", nil, fmt.Errorf("zookeeper command for %s: %w", plan.NodeName(node), err)
		}
	}
	return inst.Java, jvmArgs(inst, c.ZooKeeper, dir), nil
}

// jvmArgs is the java command line of a node whose files are in dir.
func jvmArgs(inst Install, k *plan.ZooKeeperKnobs, dir string) []string {
	var args []string
	if k != nil && k.JVMHeap > 0 {
		// Equal bounds: the heap is committed at start, so a run does
		// not measure the JVM growing it.
		heap := strconv.FormatInt(k.JVMHeap, 10)
		args = append(args, "-Xms"+heap, "-Xmx"+heap)
	}
	args = append(args,
		// A JVM out of memory is in an undefined state; zkServer.sh kills
		// it (-XX:OnOutOfMemoryError='kill -9 %p'). Exiting says so in
		// the log and shows up as a dead node.
		"-XX:+ExitOnOutOfMemoryError",
		// Both logging backends are configured, so that the node logs
		// whichever SLF4J binding the installation has: log4j 1.2 on
		// Debian and in releases before 3.8, logback in 3.8 releases.
		"-Dlog4j.configuration=file:"+filepath.Join(dir, log4jFile),
		"-Dlogback.configurationFile="+filepath.Join(dir, logbackFile),
		"-cp", inst.ClassPath,
		mainClass,
		filepath.Join(dir, configFile),
	)
	return args
}

// config renders zoo.cfg for node of cluster c with its files under dir.
func config(c plan.ClusterSpec, node int, eps []stores.Endpoint, dir string) (string, error) {
	members := slices.Clone(eps)
	slices.SortFunc(members, func(a, b stores.Endpoint) int { return cmp.Compare(a.Node, b.Node) })
	var self *stores.Endpoint
	var servers []string
	for i, ep := range members {
		if i > 0 && members[i-1].Node == ep.Node {
			return "", fmt.Errorf("zookeeper config: %s listed twice", plan.NodeName(ep.Node))
		}
		if ep.Node < 1 || ep.Node > 255 {
			// ZooKeeper's administrator's guide asks for a myid
			// between 1 and 255.
			return "", fmt.Errorf("zookeeper config: node %d out of range 1..255", ep.Node)
		}
		line, err := serverLine(ep)
		if err != nil {
			return "", err
		}
		servers = append(servers, line)
		if ep.Node == node {
			self = &members[i]
		}
	}
	if self == nil {
		return "", fmt.Errorf("zookeeper config: %s is not among the %d endpoints", plan.NodeName(node), len(eps))
	}
	clientHost, clientPort, err := splitAddr(self.ClientAddr)
	if err != nil {
		return "", fmt.Errorf("zookeeper config: client address of %s: %w", plan.NodeName(node), err)
	}

	tick, initLimit, syncLimit := defaultTickTime, defaultInitLimit, defaultSyncLimit
	var b strings.Builder
	fmt.Fprintf(&b, "# %s of cluster %q, written by scenario on every start.\n", plan.NodeName(node), c.Name)
	k := c.ZooKeeper
	if k != nil && k.TickTime > 0 {
		tick = k.TickTime.D()
	}
	if k != nil && k.InitLimit > 0 {
		initLimit = k.InitLimit
	}
	if k != nil && k.SyncLimit > 0 {
		syncLimit = k.SyncLimit
	}
	fmt.Fprintf(&b, "tickTime=%s\ninitLimit=%d\nsyncLimit=%d\n", millis(tick), initLimit, syncLimit)
	if k != nil && k.SnapCount > 0 {
		// Not a zoo.cfg key as such: ZooKeeper turns unknown keys into
		// "zookeeper."-prefixed system properties, and snapCount is
		// read from zookeeper.snapCount.
		fmt.Fprintf(&b, "snapCount=%d\n", k.SnapCount)
	}
	if k != nil && k.MaxClientCnxns > 0 {
		fmt.Fprintf(&b, "maxClientCnxns=%d\n", k.MaxClientCnxns)
	}
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(dir, dataSubdir))
	fmt.Fprintf(&b, "dataLogDir=%s\n", filepath.Join(dir, logSubdir))
	// Without clientPortAddress the client port binds the wildcard
	// address; the quorum and election ports bind the node's own
	// server.N host as long as quorumListenOnAllIPs stays false.
	fmt.Fprintf(&b, "clientPortAddress=%s\nclientPort=%s\n", clientHost, clientPort)
	b.WriteString("quorumListenOnAllIPs=false\n")
	// The AdminServer (Jetty) would listen on 8080 on every address:
	// one node per machine at most, and a port nobody asked for.
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=" + fourLetterWords + "\n")
	// Purging snapshots is disk activity a run did not ask for.
	b.WriteString("autopurge.purgeInterval=0\n")
	if len(members) > 1 {
		// Never fall back to standalone mode should the ensemble
		// shrink to one member.
		b.WriteString("standaloneEnabled=false\n")
	}
	for _, s := range servers {
		b.WriteString(s + "\n")
	}
	return b.String(), nil
}

// serverLine is ep's server.N line: quorum and election address share a
// host.
func serverLine(ep stores.Endpoint) (string, error) {
	name := plan.NodeName(ep.Node)
	if len(ep.Extra) < 1 {
		return "", fmt.Errorf("zookeeper config: %s has no leader-election address (Endpoint.Extra[0])", name)
	}
	peerHost, peerPort, err := splitAddr(ep.PeerAddr)
	if err != nil {
		return "", fmt.Errorf("zookeeper config: peer address of %s: %w", name, err)
	}
	electionHost, electionPort, err := splitAddr(ep.Extra[0])
	if err != nil {
		return "", fmt.Errorf("zookeeper config: election address of %s: %w", name, err)
	}
	if peerHost != electionHost {
		return "", fmt.Errorf("zookeeper config: %s: quorum address %s and election address %s must be on one host (server.N takes a single host)", name, ep.PeerAddr, ep.Extra[0])
	}
	if strings.Contains(peerHost, ":") {
		peerHost = "[" + peerHost + "]" // ZooKeeper's IPv6 syntax
	}
	return fmt.Sprintf("server.%d=%s:%s:%s", ep.Node, peerHost, peerPort, electionPort), nil
}

// splitAddr splits host:port and refuses an empty or wildcard host: every
// port binds the address it is given, and a node must never listen on
// all of the machine's addresses.
func splitAddr(addr string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return "", "", fmt.Errorf("%q: a node binds the address it is given; want a specific host, not the wildcard", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("%q: bad port", addr)
	}
	return host, port, nil
}

// millis renders d in whole milliseconds, rounding a sub-millisecond rest
// up so that a positive value never becomes 0.
func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(ms, 10)
}

// Logging. Everything goes to standard output at INFO, which the runner
// keeps as the node's log. The four-letter-word handler logs every
// command it serves at INFO ("Processing srvr command from ..."), and the
// runner polls ten times a second: NIOServerCnxn logs nothing else at
// INFO, so it is held to WARN.
const (
	log4jConfig = `log4j.rootLogger=INFO, CONSOLE
log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=WARN
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
`
	logbackConfig = `<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder>
      <pattern>%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n</pattern>
    </encoder>
  </appender>
  <logger name="org.apache.zookeeper.server.NIOServerCnxn" level="WARN"/>
  <root level="INFO">
    <appender-ref ref="CONSOLE"/>
  </root>
</configuration>
`
)
