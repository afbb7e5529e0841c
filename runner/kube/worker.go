package kube

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const workerCtr = "worker"

// Worker is a pod that runs load workers (`scenario worker`) for the
// runner: the agent image, idle until the runner execs a worker in it.
type Worker struct {
	run  *Run
	name string
	pod  string
	uid  string
	addr netip.Addr
}

// AddWorker creates a worker pod named name, placed as p says, and waits
// until it runs.
func (r *Run) AddWorker(ctx context.Context, name string, p Placement) (*Worker, error) {
	no := false
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName(name), Namespace: r.ns, Labels: r.labels(name, "worker")},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            workerCtr,
				Image:           r.opts.AgentImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/scenario", "agent", "pause"},
			}},
		},
	}
	pod.Spec.Affinity = p.affinity()
	created := &corev1.Pod{}
	if err := r.k.Core.Create(ctx, r.ns, "pods", pod, created); err != nil {
		return nil, fmt.Errorf("create worker pod %s: %w", name, err)
	}
	ip, err := r.waitRunning(ctx, created.Name)
	if err != nil {
		return nil, fmt.Errorf("worker %s: %w", name, err)
	}
	return &Worker{run: r, name: name, pod: created.Name, uid: string(created.UID), addr: ip}, nil
}

// Name is the worker's name in the run.
func (w *Worker) Name() string { return w.name }

// Addr is the worker pod's IP.
func (w *Worker) Addr() netip.Addr { return w.addr }

// UID is the worker pod's UID.
func (w *Worker) UID() string { return w.uid }

// Exec runs `scenario worker` args in the pod, with in as its input and
// out as its output, until it ends or ctx does.
func (w *Worker) Exec(ctx context.Context, in io.Reader, out io.Writer) error {
	return w.run.exec(ctx, w.pod, workerCtr, in, out, "/scenario", "worker")
}

// Placement puts a pod on the Kubernetes nodes whose label Label has the
// value Value (a region's nodes); the zero Placement, anywhere.
type Placement struct {
	Label, Value string
}

func (p Placement) affinity() *corev1.Affinity {
	if p.Label == "" {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: p.Label, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Value}}},
		}}},
	}}
}
