package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestStartProfiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name           string
		p              profiles
		startErr       bool
		stopErr        bool
		wantCPU, wantM bool
		wantTrace      bool
	}{
		{name: "all three", p: profiles{cpu: filepath.Join(dir, "cpu.pprof"), mem: filepath.Join(dir, "mem.pprof"), trace: filepath.Join(dir, "trace.out")}, wantCPU: true, wantM: true, wantTrace: true},
		{name: "heap only", p: profiles{mem: filepath.Join(dir, "heap.pprof")}, wantM: true},
		{name: "trace only", p: profiles{trace: filepath.Join(dir, "only.trace")}, wantTrace: true},
		{name: "cpu file cannot be made", p: profiles{cpu: filepath.Join(dir, "no", "cpu.pprof")}, startErr: true},
		// The CPU profile already started is stopped again: a later
		// StartCPUProfile would fail if it were not.
		{name: "trace file cannot be made", p: profiles{cpu: filepath.Join(dir, "cpu2.pprof"), trace: filepath.Join(dir, "no", "trace.out")}, startErr: true},
		{name: "cpu profile after a failed start", p: profiles{cpu: filepath.Join(dir, "cpu3.pprof")}, wantCPU: true},
		{name: "heap file cannot be made", p: profiles{mem: dir}, stopErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, err := startProfiles(tt.p)
			if (err != nil) != tt.startErr {
				t.Fatalf("start: %v, want error %v", err, tt.startErr)
			}
			if err != nil {
				return
			}
			if err := stop(); (err != nil) != tt.stopErr {
				t.Fatalf("stop: %v, want error %v", err, tt.stopErr)
			}
			if tt.wantTrace {
				// An execution trace starts with its version line.
				b, err := os.ReadFile(tt.p.trace)
				if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
					t.Errorf("%s is not an execution trace: %d bytes, %v", tt.p.trace, len(b), err)
				}
			}
			for path, want := range map[string]bool{tt.p.cpu: tt.wantCPU, tt.p.mem: tt.wantM} {
				if !want {
					continue
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				// A profile is a gzipped protocol buffer.
				n, err := func() (int64, error) {
					defer f.Close()
					z, err := gzip.NewReader(f)
					if err != nil {
						return 0, err
					}
					return io.Copy(io.Discard, z)
				}()
				if err != nil || n == 0 {
					t.Errorf("%s is not a profile: %d bytes, %v", path, n, err)
				}
			}
		})
	}
}
