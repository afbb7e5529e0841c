package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// tarEntry is what the tests compare of one tar header.
type tarEntry struct {
	name     string
	typ      byte
	mode     int64
	linkname string
	body     string
}

// readTar lists a tar stream's entries in order.
func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner names %q/%q, want numeric owners only", hdr.Name, hdr.Uname, hdr.Gname)
		}
		out = append(out, tarEntry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname, string(body)})
	}
}

// rootfs makes a small root filesystem shaped like bookworm's: /bin is a
// link to usr/bin.
func rootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mkdir := func(p string, mode fs.FileMode) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string, mode fs.FileMode) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("usr/bin", 0o755)
	mkdir("tmp", os.ModeSticky|0o777)
	mkdir("etc", 0o755)
	mkdir("opt", 0o755)
	write("usr/bin/sleep", "#!sleep", 0o755)
	write("usr/bin/su", "setuid", os.ModeSetuid|0o755)
	write("etc/shadow", "secret", 0o640)
	link("bin", "usr/bin")
	link("etc/alternatives", "/usr/bin")
	if err := os.Link(filepath.Join(root, "usr/bin/sleep"), filepath.Join(root, "usr/bin/sleep2")); err != nil {
		t.Fatal(err)
	}
	// A FIFO stands for the device nodes debootstrap makes in /dev.
	if err := syscall.Mkfifo(filepath.Join(root, "etc/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestWriteTar(t *testing.T) {
	root := rootfs(t)
	bin := filepath.Join(t.TempDir(), "consul")
	if err := os.WriteFile(bin, []byte("ELF"), 0o600); err != nil {
		t.Fatal(err)
	}
	extras := []entry{
		file("/bin/consul", bin),
		{name: "/apache-zookeeper-3.8.0-bin/lib", dir: true, mode: 0o755},
		symlink("/apache-zookeeper-3.8.0-bin/lib/zookeeper-3.8.0.jar", "/usr/share/java/zookeeper.jar"),
		symlink("/opt/java/openjdk", "/usr/lib/jvm/java-17-openjdk-amd64"),
		// Through an absolute link: /etc/alternatives -> /usr/bin.
		file("/etc/alternatives/etcd", bin),
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, root, extras); err != nil {
		t.Fatal(err)
	}
	got := readTar(t, &buf)
	want := []tarEntry{
		{"bin", tar.TypeSymlink, 0o777, "usr/bin", ""},
		{"etc/", tar.TypeDir, 0o755, "", ""},
		{"etc/alternatives", tar.TypeSymlink, 0o777, "/usr/bin", ""},
		// etc/fifo is left out.
		{"etc/shadow", tar.TypeReg, 0o640, "", "secret"},
		{"opt/", tar.TypeDir, 0o755, "", ""},
		{"tmp/", tar.TypeDir, 0o1777, "", ""},
		{"usr/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/sleep", tar.TypeReg, 0o755, "", "#!sleep"},
		{"usr/bin/sleep2", tar.TypeLink, 0o755, "usr/bin/sleep", ""},
		{"usr/bin/su", tar.TypeReg, 0o4755, "", "setuid"},
		// Extras: /bin/consul lands where /bin leads, as an executable.
		{"usr/bin/consul", tar.TypeReg, 0o755, "", "ELF"},
		{"apache-zookeeper-3.8.0-bin/", tar.TypeDir, 0o755, "", ""},
		{"apache-zookeeper-3.8.0-bin/lib/", tar.TypeDir, 0o755, "", ""},
		{"apache-zookeeper-3.8.0-bin/lib/zookeeper-3.8.0.jar", tar.TypeSymlink, 0o777, "/usr/share/java/zookeeper.jar", ""},
		{"opt/java/", tar.TypeDir, 0o755, "", ""},
		{"opt/java/openjdk", tar.TypeSymlink, 0o777, "/usr/lib/jvm/java-17-openjdk-amd64", ""},
		{"usr/bin/etcd", tar.TypeReg, 0o755, "", "ELF"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("tar entries:\n%v\nwant\n%v", got, want)
	}
}

func TestWriteTarKeepsOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a file to another user")
	}
	root := t.TempDir()
	p := filepath.Join(root, "shadow")
	if err := os.WriteFile(p, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, 0, 42); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, root, nil); err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Uid != 0 || hdr.Gid != 42 {
		t.Errorf("shadow owned by %d:%d, want 0:42", hdr.Uid, hdr.Gid)
	}
}

func TestWriteTarMissingSource(t *testing.T) {
	root := rootfs(t)
	err := writeTar(io.Discard, root, []entry{file("/usr/local/bin/etcd", filepath.Join(root, "nope"))})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writeTar with a missing binary = %v, want a not-exist error", err)
	}
}

func TestResolveInRoot(t *testing.T) {
	root := rootfs(t)
	if err := os.Symlink("../../bin", filepath.Join(root, "usr/bin/up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
		wantErr          bool
	}{
		{name: "relative link", path: "/bin", want: "/usr/bin"},
		{name: "through a link", path: "/bin/consul", want: "/usr/bin/consul"},
		{name: "absolute link", path: "/etc/alternatives/x", want: "/usr/bin/x"},
		{name: "missing kept", path: "/opt/java/openjdk", want: "/opt/java/openjdk"},
		{name: "dot dot stops at root", path: "/usr/bin/up/sleep", want: "/usr/bin/sleep"},
		{name: "dot dot past root", path: "/../../bin", want: "/usr/bin"},
		{name: "root", path: "/", want: "/"},
		{name: "loop", path: "/loop/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveInRoot(root, tt.path)
			if tt.wantErr {
				if err == nil {
					t.Errorf("resolveInRoot(%q) = %q, want an error", tt.path, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("resolveInRoot(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}
