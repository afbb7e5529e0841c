package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"
)

// TestBrowserRendersFigures opens report.html and sweep.html in headless
// Chromium and checks the DOM the browser built: every figure is there
// with its chart. It catches what parsing our own output cannot: markup a
// browser repairs differently, SVG it drops.
func TestBrowserRendersFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not on PATH; install it with apt-get install chromium")
	}
	dir := t.TempDir()
	hlogDir := filepath.Join(dir, "hlog")
	if err := os.MkdirAll(hlogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := simulate(t, hlogDir, 20, 200)
	runPage := filepath.Join(dir, FileName)
	if err := WriteFile(runPage, r, hlogDir); err != nil {
		t.Fatal(err)
	}
	sweepPage := filepath.Join(dir, SweepFileName)
	if err := WriteSweepFile(sweepPage, sweepRuns()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		page string
		ids  []string
	}{
		{name: "report.html", page: runPage, ids: figureIDs},
		{name: "sweep.html", page: sweepPage, ids: []string{"p99-steady", "p99-failover", "failover-failover", "elections-failover"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := dumpDOM(t, chromium, tt.page)
			checkFigures(t, doc, tt.ids)
		})
	}
}

// dumpDOM loads page in Chromium and parses the DOM it serialises.
func dumpDOM(t *testing.T, chromium, page string) *xhtml.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", page, err, stderr.String())
	}
	if stdout.Len() < 1000 {
		t.Fatalf("chromium dumped no page (%d bytes):\n%s", stdout.Len(), stderr.String())
	}
	doc, err := xhtml.Parse(&stdout)
	if err != nil {
		t.Fatalf("parse chromium's DOM: %v", err)
	}
	return doc
}
