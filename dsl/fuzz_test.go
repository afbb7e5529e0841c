package dsl_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/dsl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// FuzzLoad feeds arbitrary files through every stage of the language: parse,
// variables, sweep expansion, decoding, validation, compilation and the
// plan's JSON encoding. Whatever the input, Load must return diagnostics,
// never panic; when it succeeds, every plan must encode.
//
//	go test ./dsl -run '^$' -fuzz FuzzLoad -fuzztime 10m
func FuzzLoad(f *testing.F) {
	for _, root := range []string{"../examples", "testdata"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".hcl") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f.Add(src)
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// The fuzzing engine does not notice a hung input; a slow Load is a
		// bug here (an unbounded loop, or a huge number written out), so
		// crash with the stacks and let the engine keep the input.
		wd := time.AfterFunc(10*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("Load took over 10s on %q\n%s", src, buf[:runtime.Stack(buf, true)]))
		})
		defer wd.Stop()
		build, diags := dsl.Load(hclparse.NewParser(), "fuzz.hcl", src, dsl.VarOptions{})
		for _, d := range diags {
			if d.Summary == "" {
				t.Errorf("diagnostic without a summary: %#v", d)
			}
			if d.Subject == nil {
				t.Errorf("diagnostic %q without a subject", d.Summary)
			}
		}
		if diags.HasErrors() || build == nil {
			return
		}
		for _, p := range build.Plans {
			if _, err := json.Marshal(p); err != nil {
				t.Fatalf("plan does not encode: %v", err)
			}
		}
	})
}
