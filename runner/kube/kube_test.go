package kube

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
