package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal"

	"github.com/coordlab/scenario/internal/kubelocal/kubetest"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/registry"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// TestEtcdPods runs a 3-member etcd as pods and takes its members
// through every fault the agent carries out: kill, restart with the same
// data, stop, pause, and an exit nobody asked for.
func TestEtcdPods(t *testing.T) {
	d, _ := registry.Lookup(plan.StoreEtcd)
	image := images.Default(plan.StoreEtcd, "")
	c, agent := kubetest.Cluster(t, image)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// As a user with only what deploy/kubernetes-rbac.yaml grants.
	kubeconfig := restrictedUser(t, ctx, c)
	run, err := NewRun(ctx, Options{Kubeconfig: kubeconfig, RunID: "test-etcd", AgentImage: agent, StopGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			run.Close(context.Background())
		}
	}()
	nodes := make([]*Node, 3)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i+1)
		n, err := run.AddNode(ctx, name, NodeSpec{Image: image, DataDir: filepath.Join(dir, name, "data"), LogPath: filepath.Join(dir, name+".log")})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	var initial, endpoints []string
	for i, n := range nodes {
		initial = append(initial, fmt.Sprintf("n%d=http://%s:2380", i+1, n.Addr()))
		endpoints = append(endpoints, fmt.Sprintf("%s:2379", n.Addr()))
	}
	for i, n := range nodes {
		ip := n.Addr().String()
		// A file written here reaches the pod at each start.
		if err := os.MkdirAll(n.DataDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.DataDir(), "marker"), []byte("from the runner"), 0o644); err != nil {
			t.Fatal(err)
		}
		n.SetCommand(d.Image.Server, []string{"--name", fmt.Sprintf("n%d", i+1), "--data-dir", filepath.Join(n.DataDir(), "etcd"),
			"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://" + ip + ":2379",
			"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + ip + ":2380",
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new"})
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	put := func(key string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, key, "v")
		return err
	}
	eventually(t, "first write", func() error { return put("a") })

	out := &syncBuffer{}
	if err := nodes[0].exec(ctx, nil, out, "cat", filepath.Join(nodes[0].DataDir(), "marker")); err != nil || out.String() != "from the runner" {
		t.Fatalf("marker in the pod: %q, %v", out.String(), err)
	}

	// Kill: the store dies, the pod stays, the cluster goes on.
	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nodes[0].Exited():
	default:
		t.Fatal("Exited not closed after Kill")
	}
	if nodes[0].Running() || nodes[0].Err() != nil {
		t.Fatalf("after kill: running %v, err %v", nodes[0].Running(), nodes[0].Err())
	}
	eventually(t, "write with a member down", func() error { return put("b") })
	// Restart with the same data: the member rejoins and catches up.
	if err := nodes[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	one, err := clientv3.New(clientv3.Config{Endpoints: endpoints[:1], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	eventually(t, "restarted member serves what it missed", func() error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		r, err := one.Get(ctx, "b", clientv3.WithSerializable())
		if err == nil && len(r.Kvs) != 1 {
			err = fmt.Errorf("key b not there yet")
		}
		return err
	})

	// Pause: the member answers nothing until resumed.
	two, err := clientv3.New(clientv3.Config{Endpoints: endpoints[1:2], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	if err := nodes[1].Pause(); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = two.Get(pctx, "a", clientv3.WithSerializable())
	pcancel()
	if err == nil {
		t.Fatal("a paused member answered")
	}
	if err := nodes[1].Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "resumed member answers", func() error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := two.Get(ctx, "a", clientv3.WithSerializable())
		return err
	})

	// An exit nobody asked for shows as an error, through the watch.
	pid := nodes[2].PID()
	if err := nodes[2].exec(ctx, nil, nil, "sh", "-c", fmt.Sprintf("kill -9 %d", pid)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nodes[2].Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("an unexpected exit was not noticed")
	}
	if err := nodes[2].Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Err after an unexpected kill: %v", err)
	}
	// Stop: SIGTERM, and the store ends on its own within the grace.
	if err := nodes[1].Stop(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if nodes[1].Err() != nil {
		t.Fatalf("after stop: %v", nodes[1].Err())
	}
	if log, _ := os.ReadFile(nodes[0].LogPath()); !strings.Contains(string(log), "ready to serve client requests") {
		t.Fatalf("node log has no etcd output:\n%s", log)
	}

	ns := run.Namespace()
	if err := run.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	k, err := Connect(Options{Kubeconfig: c.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Core.Get(ctx, "", "namespaces", ns, &corev1.Namespace{}); err == nil {
		t.Fatalf("namespace %s still there after Close", ns)
	}
}

// TestReap removes the namespace of a runner that is gone, and leaves a
// live runner's alone.
func TestReap(t *testing.T) {
	c, _ := kubetest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := Connect(Options{Kubeconfig: c.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, pid int) {
		err := k.Core.Create(ctx, "", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			LabelRun: name, LabelOwner: fmt.Sprint(pid), LabelHost: labelValue(hostname()),
		}}}, &corev1.Namespace{})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("scn-dead", dead.Process.Pid)
	mk("scn-alive", os.Getpid())
	removed, err := Reap(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, ",") != "namespace scn-dead" {
		t.Fatalf("removed %v, want the dead runner's namespace only", removed)
	}
	if err := k.Core.Get(ctx, "", "namespaces", "scn-alive", &corev1.Namespace{}); err != nil {
		t.Fatalf("a live runner's namespace went: %v", err)
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// restrictedUser returns a kubeconfig of a user bound to the ClusterRole
// in deploy/kubernetes-rbac.yaml and to nothing else.
func restrictedUser(t *testing.T, ctx context.Context, c *kubelocal.Cluster) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/kubernetes-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	admin, err := Connect(Options{Kubeconfig: c.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := NewAPI(admin.Config, rbacv1.SchemeGroupVersion, rbacv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	if err := rbac.Create(ctx, "", "clusterroles", &role, &rbacv1.ClusterRole{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const user = "scenario-tester"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	if err := rbac.Create(ctx, "", "clusterrolebindings", binding, &rbacv1.ClusterRoleBinding{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	path, err := c.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	// The role grants pods, not secrets: the user must be refused those.
	k, err := Connect(Options{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Core.List(ctx, "default", "secrets", metav1.ListOptions{}, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the restricted user listed secrets: %v", err)
	}
	return path
}

// TestStorageClassAndDisk puts a member's data on a claim of a declared
// storage class (a static hostPath volume of a class without a
// provisioner, as a cluster with local volumes has) and runs a disk fault's
// writers in the pod, on that volume beside the data.
func TestStorageClassAndDisk(t *testing.T) {
	d, _ := registry.Lookup(plan.StoreEtcd)
	image := images.Default(plan.StoreEtcd, "")
	c, agent := kubetest.Cluster(t, image)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := Connect(Options{Kubeconfig: c.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	const class = "scn-test-local"
	mode := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
	storage, err := NewAPI(admin.Config, storagev1.SchemeGroupVersion, storagev1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Create(ctx, "", "storageclasses", sc, &storagev1.StorageClass{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	defer storage.Delete(context.Background(), "", "storageclasses", class, metav1.DeleteOptions{})
	volDir := t.TempDir()
	hostPath := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "scn-test-pv"},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: volDir, Type: &hostPath}},
		},
	}
	if err := admin.Core.Create(ctx, "", "persistentvolumes", pv, &corev1.PersistentVolume{}); err != nil {
		t.Fatal(err)
	}
	defer admin.Core.Delete(context.Background(), "", "persistentvolumes", pv.Name, metav1.DeleteOptions{})

	run, err := NewRun(ctx, Options{Kubeconfig: restrictedUser(t, ctx, c), RunID: "test-storage", AgentImage: agent, StopGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close(context.Background())
	dir := t.TempDir()
	n, err := run.AddNode(ctx, "n1", NodeSpec{Image: image, DataDir: filepath.Join(dir, "n1", "data"), LogPath: filepath.Join(dir, "n1.log"),
		StorageClass: class, StorageSize: "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	ip := n.Addr().String()
	n.SetCommand(d.Image.Server, []string{"--name", "n1", "--data-dir", filepath.Join(n.DataDir(), "etcd"),
		"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://" + ip + ":2379",
		"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + ip + ":2380",
		"--initial-cluster", "n1=http://" + ip + ":2380"})
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The store's data is on the claimed volume.
	eventually(t, "etcd's data on the volume", func() error {
		_, err := os.Stat(filepath.Join(volDir, "data", "etcd", "member"))
		return err
	})

	part, err := n.StartDiskLoad(ctx, plan.DiskSpec{BlockSize: 16 << 10, Fsync: true, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the writers' files on the volume, beside the data", func() error {
		ents, err := os.ReadDir(filepath.Join(volDir, "contention", "disk-1"))
		if err == nil && len(ents) != 2 {
			err = fmt.Errorf("%d files, want 2", len(ents))
		}
		return err
	})
	time.Sleep(300 * time.Millisecond)
	if err := part.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	tot := part.Totals()
	if tot.Writes == 0 || tot.Bytes != tot.Writes*16<<10 || tot.Fsync == nil || part.Err() != nil {
		t.Errorf("disk writers in the pod: %+v, err %v", tot, part.Err())
	}
	if _, err := os.Stat(filepath.Join(volDir, "contention", "disk-1")); !os.IsNotExist(err) {
		t.Errorf("the writers' files are still there after Stop: %v", err)
	}
	if err := part.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
