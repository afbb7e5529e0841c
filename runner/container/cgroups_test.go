package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/proc"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCgroupUsage(t *testing.T) {
	const id = "/docker/abc"
	tests := []struct {
		name  string
		files map[string]string
		want  Usage
	}{
		{
			name: "cgroup v1, as Docker 20.10 on this machine",
			files: map[string]string{
				"proc/7/cgroup":                                                "9:name=systemd:" + id + "\n7:blkio:" + id + "\n4:memory:" + id + "\n2:cpuacct:" + id + "\n1:cpu:" + id + "\n0::" + id + "\n",
				"cg/cpuacct" + id + "/cpuacct.usage":                           "1500000000\n",
				"cg/memory" + id + "/memory.usage_in_bytes":                    "10485760\n",
				"cg/memory" + id + "/memory.stat":                              "cache 3000000\ntotal_cache 3000000\ntotal_inactive_file 2097152\n",
				"cg/blkio" + id + "/blkio.throttle.io_service_bytes_recursive": "8:0 Read 100\n8:0 Write 4096\n8:16 Write 1000\n8:0 Total 4196\nTotal 5196\n",
				"cg/cpuacct" + id + "/tasks":                                   "7\n8\n9\n", // 9 has exited
				"proc/7/schedstat":                                             "1000 300 2\n",
				"proc/8/schedstat":                                             "1000 45 2\n",
			},
			want: Usage{CPU: 1500 * time.Millisecond, RSS: 8388608, Written: 5096, Wait: 345},
		},
		{
			name: "cgroup v1 with cpu and cpuacct joined and no blkio",
			files: map[string]string{
				"proc/7/cgroup":                             "4:memory:" + id + "\n2:cpu,cpuacct:" + id + "\n",
				"cg/cpuacct" + id + "/cpuacct.usage":        "42\n",
				"cg/memory" + id + "/memory.usage_in_bytes": "4096\n",
			},
			want: Usage{CPU: 42, RSS: 4096, Written: -1, Wait: -1}, // no tasks file
		},
		{
			name: "cgroup v2",
			files: map[string]string{
				"proc/7/cgroup": "0::/system.slice/docker-abc.scope\n",
				"cg/system.slice/docker-abc.scope/cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\n",
				"cg/system.slice/docker-abc.scope/memory.current": "8192\n",
				"cg/system.slice/docker-abc.scope/memory.stat":    "anon 4096\ninactive_file 1024\n",
				"cg/system.slice/docker-abc.scope/io.stat":        "8:0 rbytes=10 wbytes=300 rios=1 wios=2\n8:16 rbytes=0 wbytes=700\n",
				"cg/system.slice/docker-abc.scope/cgroup.threads": "7\n12\n",
				"proc/7/schedstat":  "5 2000000 1\n",
				"proc/12/schedstat": "5 500000 1\n",
			},
			want: Usage{CPU: 2500 * time.Millisecond, RSS: 7168, Written: 1000, Wait: 2500 * time.Microsecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			var waits threadWaits
			defer waits.Close()
			got, err := cgroupUsage(filepath.Join(root, "proc"), filepath.Join(root, "cg"), 7, &waits)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := cgroupUsage(t.TempDir(), t.TempDir(), 7, &threadWaits{}); err == nil {
		t.Error("no error for a process that is gone")
	}
}

// FuzzCgroupFiles feeds the parsers of /proc/PID/cgroup and of blkio's
// byte counts: they never panic, and every group path they return comes
// from a line of the input.
func FuzzCgroupFiles(f *testing.F) {
	f.Add([]byte("9:name=systemd:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/docker/abc\n"), []byte("8:0 Read 100\n8:0 Write 4096\nTotal 4196\n"))
	f.Add([]byte("0::/system.slice/docker-abc.scope\n"), []byte(""))
	f.Add([]byte(":::\n::\n"), []byte("8:0 Write -5\n8:0 Write x\n"))
	f.Fuzz(func(t *testing.T, cgroup, blkio []byte) {
		for c, p := range proc.ParseCgroups(cgroup) {
			if !strings.Contains(string(cgroup), c) || !strings.Contains(string(cgroup), p) {
				t.Fatalf("group %q -> %q not in the input", c, p)
			}
		}
		if _, err := parseBlkioWritten(blkio); err != nil && len(blkio) > 0 {
			t.Fatalf("error %v on non-empty input", err)
		}
	})
}
