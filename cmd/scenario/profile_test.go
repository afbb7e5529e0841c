package main

import (
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
		cpu, mem       string
		startErr       bool
		stopErr        bool
		wantCPU, wantM bool
	}{
		{name: "both", cpu: filepath.Join(dir, "cpu.pprof"), mem: filepath.Join(dir, "mem.pprof"), wantCPU: true, wantM: true},
		{name: "heap only", mem: filepath.Join(dir, "heap.pprof"), wantM: true},
		{name: "cpu file cannot be made", cpu: filepath.Join(dir, "no", "cpu.pprof"), startErr: true},
		{name: "heap file cannot be made", mem: dir, stopErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, err := startProfiles(tt.cpu, tt.mem)
			if (err != nil) != tt.startErr {
				t.Fatalf("start: %v, want error %v", err, tt.startErr)
			}
			if err != nil {
				return
			}
			if err := stop(); (err != nil) != tt.stopErr {
				t.Fatalf("stop: %v, want error %v", err, tt.stopErr)
			}
			for path, want := range map[string]bool{tt.cpu: tt.wantCPU, tt.mem: tt.wantM} {
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
