package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestAPIRequests checks the requests API sends (method, path, query,
// body) and how it reads the answers, against a server that records them.
// The kubernetes tests (make test-kube) run the same calls on a real
// cluster.
func TestAPIRequests(t *testing.T) {
	type request struct{ method, path, query, kind string }
	var got request
	answer := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Kind string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		got = request{r.Method, r.URL.Path, r.URL.RawQuery, body.Kind}
		switch {
		case r.URL.Path == "/api/v1/namespaces/gone":
			answer(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: `namespaces "gone" not found`})
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/ns/pods":
			answer(w, http.StatusOK, corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p1"}}}})
		case r.Method == http.MethodPost:
			// What was created, as the API answers.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
		default:
			answer(w, http.StatusOK, corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "p1", UID: "u1"}, Status: corev1.PodStatus{PodIP: "10.0.0.7"}})
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	core, err := coreAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := NewAPI(cfg, rbacv1.SchemeGroupVersion, rbacv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := &corev1.Pod{}

	cases := []struct {
		name string
		call func() error
		want request
	}{
		{"a pod created in a namespace", func() error {
			if err := core.Create(ctx, "ns", "pods", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}}, pod); err != nil {
				return err
			}
			if pod.Name != "p1" {
				t.Errorf("created %+v", pod)
			}
			return nil
		}, request{"POST", "/api/v1/namespaces/ns/pods", "", "Pod"}},
		{"a namespace, of the whole cluster", func() error {
			return core.Create(ctx, "", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, &corev1.Namespace{})
		}, request{"POST", "/api/v1/namespaces", "", "Namespace"}},
		{"a pod read", func() error {
			return core.Get(ctx, "ns", "pods", "p1", pod)
		}, request{"GET", "/api/v1/namespaces/ns/pods/p1", "", ""}},
		{"pods listed by label", func() error {
			var l corev1.PodList
			if err := core.List(ctx, "ns", "pods", metav1.ListOptions{LabelSelector: "a=b"}, &l); err != nil {
				return err
			}
			if len(l.Items) != 1 || l.Items[0].Name != "p1" {
				t.Errorf("list: %+v", l.Items)
			}
			return nil
		}, request{"GET", "/api/v1/namespaces/ns/pods", "labelSelector=a%3Db", ""}},
		{"a namespace deleted with its options", func() error {
			zero := int64(0)
			return core.Delete(ctx, "", "namespaces", "ns", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}, request{"DELETE", "/api/v1/namespaces/ns", "", "DeleteOptions"}},
		{"another group's object, under /apis", func() error {
			return rbac.Create(ctx, "", "clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, &rbacv1.ClusterRole{})
		}, request{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "", "ClusterRole"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("request %+v, want %+v", got, c.want)
			}
		})
	}
	if err := core.Get(ctx, "ns", "pods", "p1", pod); err != nil || pod.Status.PodIP != "10.0.0.7" || pod.UID != "u1" {
		t.Errorf("the answer decoded as %+v (%v)", pod, err)
	}
	if err := core.Get(ctx, "", "namespaces", "gone", &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a 404 Status: %v, want an error IsNotFound recognises", err)
	}
	u := core.execURL("ns", "p1", &corev1.PodExecOptions{Container: "store", Command: []string{"kill", "-9", "1"}, Stdout: true}).URL()
	if u.Path != "/api/v1/namespaces/ns/pods/p1/exec" || u.Query()["command"][2] != "1" || u.Query().Get("container") != "store" {
		t.Errorf("exec URL %s", u)
	}
}
