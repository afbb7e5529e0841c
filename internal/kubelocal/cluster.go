package kubelocal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/gobuild"
)

// The node's addresses. The API server refuses a loopback advertise
// address, so the node gets an address from TEST-NET-1 (RFC 5737, never
// routed) on an interface of ours; pods get a /24 on our bridge with
// no route off it, so nothing a pod sends can leave the machine.
const (
	NodeName    = "scn-node"
	nodeAddr    = "192.0.2.1"
	podSubnet   = "10.252.0.0/24"
	serviceCIDR = "10.251.0.0/24"
	apiPort     = "6443"
)

// Options configure Up.
type Options struct {
	// CacheDir is the store cache holding the binaries ("" means the
	// default); Up builds nothing.
	CacheDir string
	// SandboxImage is the pods' pause image, already in Docker's engine
	// (Up imports it).
	SandboxImage string
	Progress     io.Writer
	Logger       *slog.Logger
}

// Cluster is a running single-node cluster.
type Cluster struct {
	ca     *authority
	dir    string
	host   *hostState
	socket string
	procs  []*exec.Cmd
	log    *slog.Logger
	unlock func()
}

// NotBuiltError says the binaries are not in the cache.
type NotBuiltError struct{ Dir string }

func (e *NotBuiltError) Error() string {
	return fmt.Sprintf("kubernetes %s is not built in %s: run `go run ./internal/kubelocal/cmd/kubelocal build` (10-37 minutes on two cores, once)", Version, e.Dir)
}

// Missing says what this machine lacks to run a local cluster, or nil.
func Missing(cacheDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("a local Kubernetes needs root (it runs a kubelet and a containerd)")
	}
	for _, b := range []string{"containerd", "runc", "ctr", "ip", "iptables", "docker"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("a local Kubernetes needs %s on PATH (apt-get install containerd runc iproute2 iptables docker.io)", b)
		}
	}
	for _, p := range []string{"bridge", "host-local", "firewall", "loopback"} {
		if !gobuild.IsExecutable(filepath.Join(cniBinDir, p)) {
			return fmt.Errorf("a local Kubernetes needs the CNI plugin %s in %s (apt-get install containernetworking-plugins)", p, cniBinDir)
		}
	}
	if dir, ok := Built(cacheDir); !ok {
		return &NotBuiltError{Dir: dir}
	}
	return nil
}

const cniBinDir = "/usr/lib/cni"

// Up starts a cluster: etcd, containerd, the API server, controller
// manager, scheduler and kubelet, and waits until the node is Ready. A
// cluster left by a killed run is removed first. Call Down when done.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := Missing(opts.CacheDir); err != nil {
		return nil, err
	}
	bin, _ := Built(opts.CacheDir)
	etcdBin, err := etcd.Install(ctx, etcd.InstallOptions{Version: etcd.DefaultVersion, CacheDir: opts.CacheDir, Progress: opts.Progress})
	if err != nil {
		return nil, fmt.Errorf("etcd for the API server: %w", err)
	}
	if err := os.MkdirAll(stateRoot, 0o700); err != nil {
		return nil, err
	}
	unlock, err := gobuild.LockFile(ctx, filepath.Join(stateRoot, "lock"), func() {
		fmt.Fprintln(opts.Progress, "waiting for another local kubernetes to go down...")
	})
	if err != nil {
		return nil, err
	}
	if _, err := reapLocked(ctx); err != nil {
		unlock()
		return nil, fmt.Errorf("remove the local kubernetes of a killed run: %w", err)
	}
	dir, err := os.MkdirTemp("", "scenario-kubelocal-")
	if err != nil {
		unlock()
		return nil, err
	}
	host, err := recordHost(ctx, dir)
	if err != nil {
		unlock()
		return nil, err
	}
	cl := &Cluster{dir: dir, host: host, socket: filepath.Join(dir, "containerd", "containerd.sock"), log: opts.Logger, unlock: unlock}
	host.Socket = cl.socket
	if err := host.save(); err != nil {
		unlock()
		return nil, err
	}
	start := time.Now()
	if err := cl.start(ctx, bin, etcdBin, opts); err != nil {
		logs := cl.keepLogs()
		err = fmt.Errorf("%w (logs in %s)", err, logs)
		if derr := cl.down(context.WithoutCancel(ctx)); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "local kubernetes %s up in %s (kubeconfig %s)\n", Version, time.Since(start).Round(100*time.Millisecond), cl.Kubeconfig())
	return cl, nil
}

// Kubeconfig is the path of an administrator's kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.dir, "pki", "admin.kubeconfig") }

// UserKubeconfig writes a kubeconfig for user name in groups, who may do
// only what RBAC grants them, and returns its path.
func (c *Cluster) UserKubeconfig(name string, groups ...string) (string, error) {
	file := "user-" + name
	if err := c.ca.issue(file, name, groups, nil, nil); err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, "pki", file+".kubeconfig")
	return path, c.ca.kubeconfig(path, file, "https://"+nodeAddr+":"+apiPort)
}

// Dir is the cluster's work directory (logs under logs/).
func (c *Cluster) Dir() string { return c.dir }

func (c *Cluster) start(ctx context.Context, bin, etcdBin string, opts Options) error {
	for _, d := range []string{"pki", "logs", "etcd", "containerd/root", "containerd/state", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "flex"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := c.pki(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := c.writeConfigs(opts.SandboxImage); err != nil {
		return err
	}
	// A veth pair, not a dummy: this kernel has no dummy driver. Both
	// ends stay here; deleting one deletes the other.
	if err := run(ctx, "ip", "link", "add", nodeIface, "type", "veth", "peer", "name", nodeIface+"p"); err != nil {
		return err
	}
	if err := run(ctx, "ip", "link", "set", nodeIface+"p", "up"); err != nil {
		return err
	}
	if err := run(ctx, "ip", "addr", "add", nodeAddr+"/32", "dev", nodeIface); err != nil {
		return err
	}
	if err := run(ctx, "ip", "link", "set", nodeIface, "up"); err != nil {
		return err
	}
	// Below the ephemeral range, as the runner's nodes get theirs: a port
	// the kernel picked for a bind to port 0 could be taken by an outgoing
	// connection (containerd's, the kubelet's) before etcd binds it.
	// They are held until the cluster is up, by when etcd has bound them.
	ports, release, err := process.AllocatePorts(2)
	if err != nil {
		return err
	}
	defer release()
	etcdPorts := []string{strconv.Itoa(ports[0]), strconv.Itoa(ports[1])}
	etcdURL := "http://127.0.0.1:" + etcdPorts[0]
	if err := c.daemon("etcd", etcdBin, "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+etcdPorts[1], "--initial-advertise-peer-urls", "http://127.0.0.1:"+etcdPorts[1],
		"--initial-cluster", "default=http://127.0.0.1:"+etcdPorts[1], "--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := c.daemon("containerd", "containerd", "--config", filepath.Join(c.dir, "containerd", "config.toml")); err != nil {
		return err
	}
	pki := func(f string) string { return filepath.Join(c.dir, "pki", f) }
	if err := c.daemon("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--advertise-address", nodeAddr, "--bind-address", nodeAddr, "--secure-port", apiPort,
		"--service-cluster-ip-range", serviceCIDR,
		"--client-ca-file", pki("ca.crt"),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--kubelet-client-certificate", pki("apiserver-kubelet.crt"), "--kubelet-client-key", pki("apiserver-kubelet.key"),
		"--kubelet-certificate-authority", pki("ca.crt"), "--kubelet-preferred-address-types", "InternalIP",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", pki("sa.pub"),
		"--service-account-signing-key-file", pki("sa.key"),
		"--authorization-mode", "Node,RBAC", "--allow-privileged=true",
		"--enable-priority-and-fairness=false"); err != nil {
		return err
	}
	if err := c.waitHTTPS(ctx, "https://"+nodeAddr+":"+apiPort+"/readyz", 90*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	if err := c.daemon("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig(), "--secure-port", "0", "--leader-elect=false",
		"--service-account-private-key-file", pki("sa.key"), "--root-ca-file", pki("ca.crt"),
		"--use-service-account-credentials=false",
		"--flex-volume-plugin-dir", filepath.Join(c.dir, "flex")); err != nil {
		return err
	}
	if err := c.daemon("kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig", c.Kubeconfig(), "--secure-port", "0", "--leader-elect=false"); err != nil {
		return err
	}
	if opts.SandboxImage != "" {
		if err := c.Import(ctx, opts.SandboxImage); err != nil {
			return fmt.Errorf("pause image: %w", err)
		}
	}
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	if err := c.daemon("kubelet", filepath.Join(bin, "kubelet"),
		"--kubeconfig", pki("kubelet.kubeconfig"), "--config", filepath.Join(c.dir, "kubelet", "config.yaml"),
		"--root-dir", filepath.Join(c.dir, "kubelet"), "--cert-dir", filepath.Join(c.dir, "kubelet", "pki"),
		"--hostname-override", NodeName, "--node-ip", nodeAddr); err != nil {
		return err
	}
	return c.waitNodeReady(ctx, 120*time.Second)
}

// makeCgroupRoot creates the kubelet's cgroup root under every cgroup v1
// hierarchy (the kubelet refuses a root that is missing anywhere); a new
// cpuset group must be given its parent's cpus and memory nodes before a
// task may join it. Removed at Down with everything below it.
func makeCgroupRoot() error {
	hs, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.procs")
	for _, procs := range hs {
		h := filepath.Dir(procs)
		if filepath.Base(h) == "unified" {
			continue
		}
		dir := filepath.Join(h, cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cgroup root: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("cgroup root %s: %w", f, err)
				}
			}
		}
	}
	return nil
}

func (c *Cluster) pki() error {
	a, err := newAuthority(filepath.Join(c.dir, "pki"))
	if err != nil {
		return err
	}
	c.ca = a
	ip := net.ParseIP(nodeAddr)
	svc := net.ParseIP(strings.TrimSuffix(serviceCIDR, "0/24") + "1")
	steps := []error{
		a.issue("apiserver", "kube-apiserver", nil, []net.IP{ip, svc, net.IPv4(127, 0, 0, 1)},
			[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}),
		a.issue("apiserver-kubelet", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil),
		a.issue("admin", "scenario-admin", []string{"system:masters"}, nil, nil),
		a.issue("kubelet", "system:node:"+NodeName, []string{"system:nodes"}, nil, nil),
		a.issue("kubelet-serving", NodeName, nil, []net.IP{ip}, []string{NodeName}),
		a.serviceAccountKey(),
	}
	if err := errors.Join(steps...); err != nil {
		return err
	}
	server := "https://" + nodeAddr + ":" + apiPort
	return errors.Join(a.kubeconfig(c.Kubeconfig(), "admin", server), a.kubeconfig(filepath.Join(c.dir, "pki", "kubelet.kubeconfig"), "kubelet", server))
}

func (c *Cluster) writeConfigs(sandboxImage string) error {
	p := func(f string) string { return filepath.Join(c.dir, f) }
	// restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and runc
	// fails to lower a sandbox's oom score without it.
	containerd := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, p("containerd/root"), p("containerd/state"), c.socket, p("containerd/opt"), dockerRef(sandboxImage), cniBinDir, p("cni/net.d"))
	// No ipMasq and no route off the subnet: pods reach each other and
	// the host, nothing else. The firewall plugin accepts the pods'
	// traffic in FORWARD, which Docker sets to DROP.
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "scn-kubelocal",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}},
    {"type": "firewall", "backend": "iptables"}
  ]
}
`, bridgeIface, podSubnet, p("cni/ipam"))
	pki := func(f string) string { return p("pki/" + f) }
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzPort: 0
failSwapOn: false
podLogsDir: %s
volumePluginDir: %s
resolvConf: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  imagefs.available: "0%%"
  nodefs.inodesFree: "0%%"
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
`, cgroupRoot, c.socket, nodeAddr, p("pod-logs"), p("flex"), pki("kubelet-serving.crt"), pki("kubelet-serving.key"), pki("ca.crt"))
	return errors.Join(
		os.WriteFile(p("containerd/config.toml"), []byte(containerd), 0o600),
		os.WriteFile(p("cni/net.d/10-scn.conflist"), []byte(cni), 0o600),
		os.WriteFile(p("kubelet/config.yaml"), []byte(kubelet), 0o600),
	)
}

// dockerRef is how containerd names an image Docker calls ref.
func dockerRef(ref string) string {
	if ref == "" {
		return ""
	}
	first, _, found := strings.Cut(ref, "/")
	if !found {
		return "docker.io/library/" + ref
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + ref
	}
	return ref
}

// daemon starts a component, its output in logs/<name>.log, and records
// its pid for Down and Reap.
func (c *Cluster) daemon(name, path string, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(c.dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Its own process group: a Ctrl-C meant for the runner reaches the
	// daemons through Down, in order, not all at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	c.host.Daemons = append(c.host.Daemons, daemon{PID: cmd.Process.Pid, Path: cmd.Args[0]})
	go func() { _ = cmd.Wait() }()
	c.log.Debug("kubelocal: started", "component", name, "pid", cmd.Process.Pid)
	return c.host.save()
}

func (c *Cluster) tlsClient() (*http.Client, error) {
	pki := filepath.Join(c.dir, "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}, nil
}

// waitHTTPS polls url until it answers 200.
func (c *Cluster) waitHTTPS(ctx context.Context, url string, limit time.Duration) error {
	cl, err := c.tlsClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := cl.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		last = err
		if err := c.anyExited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last answer: %v", ctx.Err(), last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// anyExited says which component has died, if one has.
func (c *Cluster) anyExited() error {
	for _, p := range c.procs {
		if p.ProcessState != nil || (p.Process != nil && p.Process.Signal(syscall.Signal(0)) != nil) {
			name := filepath.Base(p.Path)
			return fmt.Errorf("%s exited; see %s", name, filepath.Join(c.dir, "logs", name+".log"))
		}
	}
	return nil
}

// waitNodeReady polls the node's Ready condition through the API.
func (c *Cluster) waitNodeReady(ctx context.Context, limit time.Duration) error {
	cl, err := c.tlsClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	url := "https://" + nodeAddr + ":" + apiPort + "/api/v1/nodes/" + NodeName
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := cl.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && nodeReady(body) {
				return nil
			}
		}
		if err := c.anyExited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready: %w", NodeName, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Import copies images from Docker's engine into the cluster's containerd.
func (c *Cluster) Import(ctx context.Context, refs ...string) error {
	save := exec.CommandContext(ctx, "docker", append([]string{"save"}, refs...)...)
	imp := exec.CommandContext(ctx, "ctr", "--address", c.socket, "-n", "k8s.io", "images", "import", "--no-unpack", "-")
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	var saveErr, impOut strings.Builder
	save.Stderr = &saveErr
	imp.Stdout = &impOut
	imp.Stderr = &impOut
	if err := save.Start(); err != nil {
		return fmt.Errorf("docker save: %w", err)
	}
	ierr := imp.Run()
	serr := save.Wait()
	if serr != nil {
		return fmt.Errorf("docker save %s: %w: %s", strings.Join(refs, " "), serr, strings.TrimSpace(saveErr.String()))
	}
	if ierr != nil {
		return fmt.Errorf("ctr images import: %w: %s", ierr, strings.TrimSpace(impOut.String()))
	}
	return nil
}

// Down stops the cluster and puts the host back as Up found it.
func (c *Cluster) Down(ctx context.Context) error { return c.down(ctx) }

// keepLogs copies the components' logs out of the work directory, which
// Down removes, and says where they are.
func (c *Cluster) keepLogs() string {
	kept := filepath.Join(os.TempDir(), filepath.Base(c.dir)+"-logs")
	if err := os.CopyFS(kept, os.DirFS(filepath.Join(c.dir, "logs"))); err != nil {
		return filepath.Join(c.dir, "logs")
	}
	return kept
}

func (c *Cluster) down(ctx context.Context) error {
	defer c.unlock()
	// The kubelet first, so that it recreates nothing; then the rest.
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for p.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c.host.restore(ctx)
}

// Reap removes a local cluster left by a killed run, if there is one, and
// says what it removed.
func Reap(ctx context.Context) ([]string, error) {
	if err := os.MkdirAll(stateRoot, 0o700); err != nil {
		return nil, err
	}
	unlock, err := gobuild.LockFile(ctx, filepath.Join(stateRoot, "lock"), func() {})
	if err != nil {
		return nil, err
	}
	defer unlock()
	return reapLocked(ctx)
}

func reapLocked(ctx context.Context) ([]string, error) {
	h, err := loadState()
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []string{"local kubernetes in " + h.Dir}, h.restore(ctx)
}
