package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coordlab/scenario/internal/podagent"
	"github.com/coordlab/scenario/runner/process"
)

// In the pod: the agent's binary and socket on a shared emptyDir.
const (
	agentDir    = "/scn"
	agentBin    = agentDir + "/scenario"
	agentSocket = agentDir + "/agent.sock"
	storeCtr    = "store"
)

// ErrNotRunning is returned by Pause and Resume when the store is down.
var ErrNotRunning = errors.New("not running")

// callTimeout bounds one request to the agent (an exec round trip).
const callTimeout = 30 * time.Second

// NodeSpec is what a node's pod runs.
type NodeSpec struct {
	Image string
	// DataDir is the directory the store's arguments name. In the pod it
	// is an emptyDir mounted at the same path; files the runner wrote
	// into it on this machine (configuration) are copied in at each
	// start.
	DataDir string
	// LogPath is the file on this machine the store's output is appended
	// to, across restarts.
	LogPath string
	// Placement says which Kubernetes nodes the pod may run on.
	Placement Placement
	// StorageClass, when set, puts the data on a PersistentVolumeClaim of
	// that class instead of an emptyDir.
	StorageClass string
	StorageSize  string
}

// Node is one store node: a pod whose agent holds the store's process.
type Node struct {
	run  *Run
	name string
	pod  string
	spec NodeSpec
	addr netip.Addr
	uid  string

	mu      sync.Mutex
	path    string
	args    []string
	running bool
	paused  bool
	pid     int // the store's pid inside the pod
	exited  chan struct{}
	last    *podagent.Event
	sess    session
	disks   int                // disk faults started, for their ids
	cancel  context.CancelFunc // ends the watch and the log follower
	bg      sync.WaitGroup
}

// ExitError is a store ending without being asked to.
type ExitError struct {
	Node string
	Exit string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("node %s's store ended unexpectedly: %s", e.Node, e.Exit)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// AddNode creates node name's pod and waits until its agent answers; the
// store starts with Start, once its command is set.
func (r *Run) AddNode(ctx context.Context, name string, spec NodeSpec) (*Node, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("add node %s: run is closed", name)
	}
	r.mu.Unlock()
	pod, err := r.podFor(name, spec)
	if err != nil {
		return nil, err
	}
	if spec.StorageClass != "" {
		if err := r.createClaim(ctx, pod.Name, spec); err != nil {
			return nil, err
		}
	}
	created := &corev1.Pod{}
	if err := r.k.Core.Create(ctx, r.ns, "pods", pod, created); err != nil {
		return nil, fmt.Errorf("create pod for node %s: %w", name, err)
	}
	n := &Node{run: r, name: name, pod: created.Name, spec: spec, uid: string(created.UID), exited: closedChan(),
		sess: session{waiting: map[int]chan podagent.Event{}}}
	r.mu.Lock()
	r.nodes = append(r.nodes, n)
	r.mu.Unlock()
	ip, err := r.waitRunning(ctx, n.pod)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	n.addr = ip
	if err := n.waitAgent(ctx); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.bg.Add(2)
	go n.watch(wctx)
	go n.followLog(wctx)
	return n, nil
}

func (r *Run) podFor(name string, spec NodeSpec) (*corev1.Pod, error) {
	if spec.DataDir == "" || !filepath.IsAbs(spec.DataDir) {
		return nil, fmt.Errorf("node %s: DataDir must be an absolute path", name)
	}
	podName := dnsName(name)
	grace := int64(r.opts.StopGrace.Seconds()) + 5
	no := false
	data := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if spec.StorageClass != "" {
		data = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: podName + "-data"}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: r.ns, Labels: r.labels(name, "store")},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			Hostname:                      podName,
			InitContainers: []corev1.Container{{
				Name:            "agent",
				Image:           r.opts.AgentImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/scenario", "agent", "install", agentBin},
				VolumeMounts:    []corev1.VolumeMount{{Name: "agent", MountPath: agentDir}},
			}},
			Containers: []corev1.Container{{
				Name:            storeCtr,
				Image:           spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{agentBin, "agent", "run", agentSocket, "--grace", r.opts.StopGrace.String()},
				// The data volume twice: the store's directory, and beside it
				// (same filesystem) where disk faults write.
				VolumeMounts: []corev1.VolumeMount{
					{Name: "agent", MountPath: agentDir},
					{Name: "data", MountPath: spec.DataDir, SubPath: "data"},
					{Name: "data", MountPath: filepath.Join(filepath.Dir(spec.DataDir), "disk-contention-"+name), SubPath: "contention"},
				},
				SecurityContext: &corev1.SecurityContext{
					// Partition rules in the pod's own network namespace
					// (see SetCuts).
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "agent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: data},
			},
		},
	}
	pod.Spec.Affinity = spec.Placement.affinity()
	return pod, nil
}

func (r *Run) createClaim(ctx context.Context, podName string, spec NodeSpec) error {
	size := spec.StorageSize
	if size == "" {
		size = "1Gi"
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return fmt.Errorf("storage size %q: %w", size, err)
	}
	class := spec.StorageClass
	err = r.k.Core.Create(ctx, r.ns, "persistentvolumeclaims", &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: podName + "-data", Namespace: r.ns, Labels: r.labels("", "data")},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
	}, &corev1.PersistentVolumeClaim{})
	if err != nil {
		return fmt.Errorf("create volume claim for %s: %w", podName, err)
	}
	return nil
}

// waitRunning waits until the pod runs and returns its IP; a pod that
// cannot start says why (image missing, unschedulable).
func (r *Run) waitRunning(ctx context.Context, name string) (netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var why string
	for {
		p := &corev1.Pod{}
		if err := r.k.Core.Get(ctx, r.ns, "pods", name, p); err == nil {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				return netip.ParseAddr(p.Status.PodIP)
			}
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return netip.Addr{}, fmt.Errorf("pod %s/%s ended (%s): %s", r.ns, name, p.Status.Phase, podReason(p))
			}
			why = podReason(p)
			if strings.Contains(why, "ErrImageNeverPull") || strings.Contains(why, "ImagePullBackOff") || strings.Contains(why, "InvalidImageName") {
				return netip.Addr{}, fmt.Errorf("pod %s/%s cannot get its image: %s", r.ns, name, why)
			}
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("pod %s/%s not running: %w (%s)", r.ns, name, ctx.Err(), why)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podReason says what holds a pod back, from its conditions and its
// containers' states.
func podReason(p *corev1.Pod) string {
	var out []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			out = append(out, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			out = append(out, fmt.Sprintf("%s: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			out = append(out, fmt.Sprintf("%s: exited %d %s %s", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason, cs.State.Terminated.Message))
		}
	}
	if len(out) == 0 {
		return string(p.Status.Phase)
	}
	return strings.Join(out, "; ")
}

// exec runs command in the store's container, stdin from in (may be
// nil), its output to out.
func (n *Node) exec(ctx context.Context, in io.Reader, out io.Writer, command ...string) error {
	return n.run.exec(ctx, n.pod, storeCtr, in, out, command...)
}

// call sends one request to the agent and returns its answer: over the
// session when it runs, else through an exec of its own.
func (n *Node) call(ctx context.Context, req podagent.Request) (podagent.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if e, err := n.sess.request(ctx, req); !errors.Is(err, errNoSession) {
		if err == nil && e.State == "error" {
			err = fmt.Errorf("%s node %s: %s", req.Verb, n.name, e.Error)
		} else if err != nil {
			err = fmt.Errorf("%s node %s (pod %s/%s): %w", req.Verb, n.name, n.run.ns, n.pod, err)
		}
		return e, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return podagent.Event{}, err
	}
	out := &syncBuffer{limit: 1 << 20}
	err = n.exec(ctx, bytes.NewReader(b), out, agentBin, "agent", "ctl", agentSocket, "-")
	e, perr := podagent.ParseEvent(out.String())
	if perr == nil && e.State == "error" {
		return e, fmt.Errorf("%s node %s: %s", req.Verb, n.name, e.Error)
	}
	if err != nil {
		return e, fmt.Errorf("%s node %s (pod %s/%s): %w", req.Verb, n.name, n.run.ns, n.pod, err)
	}
	if perr != nil {
		return e, fmt.Errorf("%s node %s: agent answered %q: %w", req.Verb, n.name, out.String(), perr)
	}
	return e, nil
}

// waitAgent waits until the agent answers: the container has started
// and the socket is there.
func (n *Node) waitAgent(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := n.call(ctx, podagent.Request{Verb: "status"})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent in pod %s/%s not answering: %w", n.run.ns, n.pod, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// session keeps one exec stream open to the agent for the life of the
// node: its events (the one way an exit nobody asked for becomes known),
// and requests answered in a few milliseconds where an exec of their own
// takes hundreds (a fault's lag).
type session struct {
	mu      sync.Mutex
	in      io.Writer // nil while no session runs
	next    int
	waiting map[int]chan podagent.Event
}

// errNoSession sends a request through an exec of its own instead.
var errNoSession = errors.New("no agent session")

// request sends req over the session and waits for its reply.
func (s *session) request(ctx context.Context, req podagent.Request) (podagent.Event, error) {
	s.mu.Lock()
	if s.in == nil {
		s.mu.Unlock()
		return podagent.Event{}, errNoSession
	}
	s.next++
	id := s.next
	ch := make(chan podagent.Event, 1)
	s.waiting[id] = ch
	b, err := json.Marshal(podagent.SessionRequest{ID: id, Request: req})
	if err == nil {
		_, err = s.in.Write(append(b, '\n'))
	}
	s.mu.Unlock()
	if err != nil {
		s.forget(id)
		return podagent.Event{}, errNoSession
	}
	select {
	case e, ok := <-ch:
		if !ok {
			return podagent.Event{}, errNoSession
		}
		return e, nil
	case <-ctx.Done():
		s.forget(id)
		return podagent.Event{}, ctx.Err()
	}
}

func (s *session) forget(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, id)
}

func (s *session) deliver(id int, e podagent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.waiting[id]; ok {
		ch <- e
		delete(s.waiting, id)
	}
}

// attach makes in the session's input once the agent has spoken; detach
// ends it, failing the requests in flight over to their own execs.
func (s *session) attach(in io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in = in
}

func (s *session) detach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in = nil
	for id, ch := range s.waiting {
		close(ch)
		delete(s.waiting, id)
	}
}

// watch runs the agent session for the life of the node, starting it
// again if the stream breaks.
func (n *Node) watch(ctx context.Context) {
	defer n.bg.Done()
	for ctx.Err() == nil {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() {
			sc := bufio.NewScanner(outR)
			attached := false
			for sc.Scan() {
				var l podagent.SessionLine
				if json.Unmarshal(sc.Bytes(), &l) != nil {
					continue
				}
				switch {
				case l.Event != nil:
					if !attached {
						// The watch's first event: the stream is up.
						n.sess.attach(inW)
						attached = true
					}
					n.observe(*l.Event)
				case l.Reply != nil:
					n.sess.deliver(l.ID, *l.Reply)
				}
			}
			_, _ = io.Copy(io.Discard, outR)
		}()
		err := n.exec(ctx, inR, outW, agentBin, "agent", "ctl", agentSocket, "session")
		n.sess.detach()
		inW.Close()
		outW.Close()
		if ctx.Err() == nil {
			n.run.log.Warn("agent session ended; starting another", "node", n.name, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// observe applies an agent event to the node's state. Events of an
// earlier run of the store (another pid) are stale and ignored.
func (n *Node) observe(e podagent.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.State == "exited" && n.running && e.PID == n.pid {
		n.markExited(e)
	}
}

// markExited records the store's end; n.mu is held.
func (n *Node) markExited(e podagent.Event) {
	n.running, n.paused, n.pid = false, false, 0
	n.last = &e
	close(n.exited)
}

// followLog appends the pod's output to LogPath until ctx ends.
func (n *Node) followLog(ctx context.Context) {
	defer n.bg.Done()
	f, err := os.OpenFile(n.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.run.log.Warn("node log", "node", n.name, "err", err)
		return
	}
	defer f.Close()
	var since *metav1.Time
	for ctx.Err() == nil {
		opts := &corev1.PodLogOptions{Container: storeCtr, Follow: true, SinceTime: since}
		rc, err := n.run.k.Core.logs(ctx, n.run.ns, n.pod, opts)
		if err == nil {
			_, _ = io.Copy(f, rc)
			rc.Close()
		}
		now := metav1.Now()
		since = &now
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Name is the node's name within its run.
func (n *Node) Name() string { return n.name }

// Pod is the node's pod name.
func (n *Node) Pod() string { return n.pod }

// DataDir is the data directory's path, in the pod and on this machine.
func (n *Node) DataDir() string { return n.spec.DataDir }

// LogPath is the file the store's output goes to on this machine.
func (n *Node) LogPath() string { return n.spec.LogPath }

// Addr is the pod's IP.
func (n *Node) Addr() netip.Addr { return n.addr }

// UID is the pod's UID.
func (n *Node) UID() string { return n.uid }

// SetCommand sets what Start runs: the store's program and arguments.
func (n *Node) SetCommand(path string, args []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.path, n.args = path, args
	return nil
}

// maxFiles bounds the configuration copied into a pod at each start.
const maxFiles = 4 << 20

// files reads what the runner wrote into DataDir on this machine.
func (n *Node) files() (map[string][]byte, error) {
	out := map[string][]byte{}
	total := 0
	err := filepath.WalkDir(n.spec.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += len(b); total > maxFiles {
			return fmt.Errorf("more than %d bytes of configuration in %s", maxFiles, n.spec.DataDir)
		}
		out[p] = b
		return nil
	})
	return out, err
}

// Start starts the store in its pod; a node that runs is left alone.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.running {
		n.mu.Unlock()
		return nil
	}
	argv := append([]string{n.path}, n.args...)
	n.mu.Unlock()
	if argv[0] == "" {
		return fmt.Errorf("start node %s: no command set", n.name)
	}
	files, err := n.files()
	if err != nil {
		return fmt.Errorf("start node %s: %w", n.name, err)
	}
	e, err := n.call(ctx, podagent.Request{Verb: "start", Argv: argv, Files: files})
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.running, n.paused, n.pid, n.last = true, false, e.PID, nil
	n.exited = make(chan struct{})
	return nil
}

// Restart starts the store again, in the same pod with the same data.
func (n *Node) Restart(ctx context.Context) error { return n.Start(ctx) }

// Kill kills the store (SIGKILL) and returns once it is dead.
func (n *Node) Kill() error {
	return n.end(context.Background(), podagent.Request{Verb: "kill"})
}

// Stop stops the store (SIGTERM, SIGKILL after grace) and returns once it
// has ended; ctx ending kills it at once.
func (n *Node) Stop(ctx context.Context, grace time.Duration) error {
	err := n.end(ctx, podagent.Request{Verb: "stop", Grace: grace})
	if err != nil && ctx.Err() != nil {
		return n.Kill()
	}
	return err
}

func (n *Node) end(ctx context.Context, req podagent.Request) error {
	n.mu.Lock()
	running, pid := n.running, n.pid
	n.mu.Unlock()
	if !running {
		return nil
	}
	if _, err := n.call(ctx, req); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running && n.pid == pid {
		n.markExited(podagent.Event{State: "exited", PID: pid, Exit: req.Verb, Expected: true})
	}
	return nil
}

// Pause stops every process of the store (SIGSTOP to its group).
func (n *Node) Pause() error { return n.setPaused(true) }

// Resume continues a paused store.
func (n *Node) Resume() error { return n.setPaused(false) }

func (n *Node) setPaused(p bool) error {
	verb := "pause"
	if !p {
		verb = "resume"
	}
	n.mu.Lock()
	running, paused := n.running, n.paused
	n.mu.Unlock()
	if !running {
		return fmt.Errorf("%s node %s: %w", verb, n.name, ErrNotRunning)
	}
	if paused == p {
		return nil
	}
	if _, err := n.call(context.Background(), podagent.Request{Verb: verb}); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = p
	n.mu.Unlock()
	return nil
}

// PID is the store's pid inside its pod, 0 while it is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pid
}

// Running reports whether the store runs (paused or not).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// Exited is closed when the store's current run ends.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exited
}

// Err is an *ExitError when the store last ended without being asked to.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running || n.last == nil || n.last.Expected {
		return nil
	}
	return &ExitError{Node: n.name, Exit: n.last.Exit}
}

// Tail is the end of the node's log.
func (n *Node) Tail(lines int) string {
	s, err := process.TailFile(n.spec.LogPath, lines)
	if err != nil {
		return ""
	}
	return s
}

// close ends the watch and the log follower.
func (n *Node) close() {
	if n.cancel != nil {
		// Let the follower catch the store's last lines.
		time.Sleep(200 * time.Millisecond)
		n.cancel()
	}
	n.bg.Wait()
}
