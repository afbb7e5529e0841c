// Package kube runs a scenario's store nodes as pods of a Kubernetes
// cluster, in a namespace of the run (scn-<run>), each pod a store's image
// with the agent (package podagent) as its first process, so that a node
// can be killed, stopped, restarted with the same pod and data, and paused
// at the moment a fault says. Everything of a run carries its labels;
// deleting the namespace removes it all, and Reap removes what a killed
// runner left.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coordlab/scenario/internal/proc"
)

// Labels on every object of a run: the docker provider's keys, plus the
// host, since an owner pid means something only on its own machine.
const (
	LabelRun   = "org.coordlab.scenario.run"
	LabelOwner = "org.coordlab.scenario.owner" // pid of the runner
	LabelHost  = "org.coordlab.scenario.host"  // the runner's host name
	LabelNode  = "org.coordlab.scenario.node"
	LabelRole  = "org.coordlab.scenario.role"
)

// NamespacePrefix begins every run's namespace.
const NamespacePrefix = "scn-"

// Options configure a Run.
type Options struct {
	// Kubeconfig is the kubeconfig file; "" means $KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context; "" means the current one, which
	// must then look like a test cluster (see Connect).
	Context string
	// AllowNonTest lets an explicitly named context that does not look
	// like a test cluster be used.
	AllowNonTest bool
	RunID        string
	// AgentImage is the image the agent comes from (images.AgentImage).
	AgentImage string
	// StopGrace bounds the stores' stop when the run ends.
	StopGrace time.Duration
	Logger    *slog.Logger
}

// Cluster is a connection to a Kubernetes cluster.
type Cluster struct {
	Config *rest.Config
	// Core is the core group's API (namespaces, pods, claims).
	Core    *API
	Context string
}

// NotTestError refuses a context that does not look like a test cluster.
type NotTestError struct {
	Context, Server string
	Explicit        bool
}

func (e *NotTestError) Error() string {
	if !e.Explicit {
		return fmt.Sprintf("kubernetes context %q (%s) does not look like a test cluster; name the context with --kube-context to use it", e.Context, e.Server)
	}
	return fmt.Sprintf("kubernetes context %q (%s) does not look like a test cluster; add --kube-allow-nontest to run a scenario (which kills and pauses what it creates, in its own namespace) there", e.Context, e.Server)
}

// testContextWords mark a context or cluster name as a test cluster's.
var testContextWords = []string{"kind", "minikube", "k3d", "k3s", "docker-desktop", "kubelocal", "test", "dev", "sandbox"}

// looksLikeTest reports whether a context is a test cluster's: one whose
// API server is on this machine (loopback, or TEST-NET-1 as a local
// cluster's is), or whose name says so.
func looksLikeTest(name, server string) bool {
	lower := strings.ToLower(name)
	for _, w := range testContextWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && (a.IsLoopback() || netip.MustParsePrefix("192.0.2.0/24").Contains(a))
}

// Connect loads the kubeconfig and refuses a context that looks like
// production unless it was named explicitly and AllowNonTest is set.
func Connect(opts Options) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: opts.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	name := opts.Context
	if name == "" {
		name = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("kubeconfig: no context %q (set KUBECONFIG or --kubeconfig, and --kube-context)", name)
	}
	server := ""
	if c, ok := raw.Clusters[kctx.Cluster]; ok {
		server = c.Server
	}
	if !looksLikeTest(name, server) && !looksLikeTest(kctx.Cluster, server) {
		if opts.Context == "" || !opts.AllowNonTest {
			return nil, &NotTestError{Context: name, Server: server, Explicit: opts.Context != ""}
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	core, err := coreAPI(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Core: core, Context: name}, nil
}

// Run is one scenario run's namespace and pods.
type Run struct {
	k    *Cluster
	ns   string
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	nodes  []*Node
	closed bool
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// labelValue makes s a valid label value (63 characters of [A-Za-z0-9-_.]).
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), 63)]), "-_.")
}

// dnsName makes s a DNS label (pod and namespace names).
func dnsName(s string) string {
	s = strings.ToLower(labelValue(s))
	s = strings.NewReplacer("_", "-", ".", "-").Replace(s)
	return strings.Trim(s[:min(len(s), 63)], "-")
}

// NewRun connects and creates the run's namespace. Close the Run.
func NewRun(ctx context.Context, opts Options) (*Run, error) {
	if opts.RunID == "" || opts.AgentImage == "" {
		return nil, errors.New("kube run: RunID and AgentImage are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	k, err := Connect(opts)
	if err != nil {
		return nil, err
	}
	r := &Run{k: k, ns: dnsName(NamespacePrefix + opts.RunID), opts: opts, log: opts.Logger}
	err = k.Core.Create(ctx, "", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: r.labels("", "")}}, &corev1.Namespace{})
	if err != nil {
		return nil, fmt.Errorf("create namespace %s in context %q: %w", r.ns, k.Context, err)
	}
	r.log.Info("kubernetes namespace created", "namespace", r.ns, "context", k.Context)
	return r, nil
}

// Namespace is the run's namespace.
func (r *Run) Namespace() string { return r.ns }

// Context is the kubeconfig context the run uses.
func (r *Run) Context() string { return r.k.Context }

func (r *Run) labels(node, role string) map[string]string {
	l := map[string]string{
		LabelRun:   labelValue(r.opts.RunID),
		LabelOwner: strconv.Itoa(os.Getpid()),
		LabelHost:  labelValue(hostname()),
	}
	if node != "" {
		l[LabelNode] = labelValue(node)
	}
	if role != "" {
		l[LabelRole] = role
	}
	return l
}

// Close stops every node's store (so that it ends as a stop would, and
// its last log lines arrive) and deletes the namespace, waiting until it
// is gone.
func (r *Run) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	nodes := slices.Clone(r.nodes)
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() { _ = n.Stop(ctx, r.opts.StopGrace) })
	}
	wg.Wait()
	for _, n := range nodes {
		n.close()
	}
	return deleteNamespace(ctx, r.k.Core, r.ns, r.log)
}

// deleteNamespace deletes ns and waits until the API no longer has it.
func deleteNamespace(ctx context.Context, core *API, ns string, log *slog.Logger) error {
	zero := int64(0)
	policy := metav1.DeletePropagationForeground
	err := core.Delete(ctx, "", "namespaces", ns, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	for {
		err := core.Get(ctx, "", "namespaces", ns, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			log.Info("kubernetes namespace deleted", "namespace", ns)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still terminating: %w", ns, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Reap deletes the namespaces of runs of this host whose runner is gone,
// and returns their names. Runs of other hosts are not this runner's to
// judge; `kubectl delete ns -l org.coordlab.scenario.owner` removes them.
func Reap(ctx context.Context, k *Cluster, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var list corev1.NamespaceList
	err := k.Core.List(ctx, "", "namespaces", metav1.ListOptions{LabelSelector: LabelOwner + "," + LabelHost + "=" + labelValue(hostname())}, &list)
	if err != nil {
		return nil, fmt.Errorf("reap: list namespaces: %w", err)
	}
	var removed []string
	var errs []error
	for _, ns := range list.Items {
		pid, err := strconv.Atoi(ns.Labels[LabelOwner])
		if err != nil || proc.Alive(pid) || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		if err := deleteNamespace(ctx, k.Core, ns.Name, log); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "namespace "+ns.Name)
	}
	return removed, errors.Join(errs...)
}

// Cluster is the connection the run uses.
func (r *Run) Cluster() *Cluster { return r.k }
