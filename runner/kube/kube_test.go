package kube

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLooksLikeTest(t *testing.T) {
	for _, tc := range []struct {
		name, server string
		want         bool
	}{
		{"kind-dev", "https://10.0.0.5:6443", true},
		{"minikube", "https://192.168.49.2:8443", true},
		{"kubelocal", "https://192.0.2.1:6443", true},
		{"whatever", "https://127.0.0.1:6443", true},
		{"whatever", "https://localhost:6443", true},
		{"whatever", "https://192.0.2.1:6443", true},
		{"prod-eu-west", "https://api.prod.example.com", false},
		{"gke_company_europe-west1_main", "https://34.1.2.3", false},
		{"arn:aws:eks:eu-west-1:1:cluster/main", "https://abc.eks.amazonaws.com", false},
	} {
		if got := looksLikeTest(tc.name, tc.server); got != tc.want {
			t.Errorf("looksLikeTest(%q, %q) = %v, want %v", tc.name, tc.server, got, tc.want)
		}
	}
}

const prodConfig = `apiVersion: v1
kind: Config
clusters:
- name: main
  cluster: {server: "https://api.prod.example.com"}
users:
- name: u
  user: {token: "x"}
contexts:
- name: prod
  context: {cluster: main, user: u}
current-context: prod
`

// TestConnectRefusesProduction: a production-looking context needs to be
// named and confirmed.
func TestConnectRefusesProduction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(prodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var nt *NotTestError
	if _, err := Connect(Options{Kubeconfig: path}); !errors.As(err, &nt) || nt.Explicit {
		t.Fatalf("current context: %v, want a NotTestError asking for --kube-context", err)
	}
	if _, err := Connect(Options{Kubeconfig: path, Context: "prod"}); !errors.As(err, &nt) || !nt.Explicit {
		t.Fatalf("named context: %v, want a NotTestError asking for --kube-allow-nontest", err)
	}
	if _, err := Connect(Options{Kubeconfig: path, Context: "prod", AllowNonTest: true}); err != nil {
		t.Fatalf("named and confirmed: %v", err)
	}
	if _, err := Connect(Options{Kubeconfig: path, Context: "nope"}); err == nil {
		t.Fatal("an unknown context was accepted")
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"etcd-n1": "etcd-n1", "A_b.c": "a-b-c", "run:2026/11": "run-2026-11"} {
		if got := dnsName(in); got != want {
			t.Errorf("dnsName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPodFor: a member's pod carries its placement as a required node
// affinity, its data on a claim when a storage class is declared, and the
// data volume a second time beside the data path for disk faults.
func TestPodFor(t *testing.T) {
	r := &Run{ns: "scn-x", opts: Options{AgentImage: "scenario/agent:test", RunID: "x"}}
	spec := NodeSpec{Image: "etcd:1", DataDir: "/w/nodes/n1/data", Placement: Placement{Label: "topology.kubernetes.io/zone", Value: "eu-1b"}, StorageClass: "ssd"}
	pod, err := r.podFor("n1", spec)
	if err != nil {
		t.Fatal(err)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if req := terms[0].MatchExpressions[0]; req.Key != "topology.kubernetes.io/zone" || len(req.Values) != 1 || req.Values[0] != "eu-1b" {
		t.Errorf("affinity %+v", req)
	}
	var data *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == "data" {
			data = &pod.Spec.Volumes[i]
		}
	}
	if data == nil || data.PersistentVolumeClaim == nil || data.PersistentVolumeClaim.ClaimName != "n1-data" {
		t.Errorf("data volume %+v, want the claim n1-data", data)
	}
	mounts := map[string]string{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == "data" {
			mounts[m.MountPath] = m.SubPath
		}
	}
	if mounts["/w/nodes/n1/data"] != "data" || mounts["/w/nodes/n1/disk-contention-n1"] != "contention" {
		t.Errorf("data mounts %v", mounts)
	}
	// Without a placement or a class: anywhere, on an emptyDir.
	pod, err = r.podFor("n1", NodeSpec{Image: "etcd:1", DataDir: "/w/nodes/n1/data"})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Affinity != nil {
		t.Errorf("affinity without a placement: %+v", pod.Spec.Affinity)
	}
	if _, err := r.podFor("n1", NodeSpec{Image: "etcd:1", DataDir: "rel"}); err == nil {
		t.Error("a relative data directory was accepted")
	}
}
