package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reaped is what ReapStale cleaned up.
type Reaped struct {
	Runs []ReapedRun
}

// ReapedRun is one run whose runner was gone.
type ReapedRun struct {
	ID  string
	Dir string
	// Killed are the processes verified to be the run's and killed.
	Killed []int
	// Foreign are pids from the run's pid files now held by processes that
	// are not the run's: the pid was reused, so they were left alone.
	Foreign []int
	// Removed says the run directory was removed.
	Removed bool
	// Kept says the directory stays because the run was marked keep.
	Kept bool
}

// orphanGrace is how old a run directory without an owner record must be
// before it counts as abandoned: NewRun writes the record just after
// creating the directory.
const orphanGrace = time.Minute

// ReapStale cleans up after runners that died without closing their run:
// for every run directory under stateDir ("" = DefaultStateDir()) whose
// owner is gone, it kills the run's processes and removes the directory,
// unless the run was marked keep. Runs of live runners, including this
// process's own, are left alone.
//
// The owner is gone when no process has its pid with its start time, so a
// recycled pid does not keep a dead run alive. A process is killed only if
// its environment carries EnvRunID=<run id>: pids come from the run's pid
// files and from a scan of /proc for that variable (which finds nodes whose
// pid file was never written and anything the nodes forked), and a pid that
// now belongs to an unrelated process is reported in Foreign instead.
// ReapStale keeps going past a run it cannot clean and returns all errors
// joined; such a run keeps its directory so a later call can retry.
func ReapStale(ctx context.Context, stateDir string, log *slog.Logger) (Reaped, error) {
	if err := platformSupported(); err != nil {
		return Reaped{}, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
		if err := checkPrivateDir(stateDir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return Reaped{}, nil
			}
			return Reaped{}, fmt.Errorf("reap stale runs: %w", err)
		}
	}
	runsDir := filepath.Join(stateDir, "runs")
	ents, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return Reaped{}, nil
	}
	if err != nil {
		return Reaped{}, fmt.Errorf("reap stale runs: %w", err)
	}

	var stale []*ReapedRun
	ids := make(map[string]bool)
	for _, e := range ents {
		// IsDir is false for a symlink: only real run directories count.
		if !e.IsDir() || !validRunID(e.Name()) {
			continue
		}
		dir := filepath.Join(runsDir, e.Name())
		if !ownerGone(dir, log) {
			continue
		}
		stale = append(stale, &ReapedRun{ID: e.Name(), Dir: dir})
		ids[e.Name()] = true
	}
	if len(stale) == 0 {
		return Reaped{}, nil
	}

	failed := make(map[string]error)
	seen := make(map[string]map[int]bool)
	// The first round takes the pid files and a /proc scan; later rounds
	// scan again in case a dying process forked a last child, until a
	// round kills nothing.
	for round := 0; round < 5; round++ {
		found := scanRunProcesses(ids)
		killed := false
		for _, s := range stale {
			if seen[s.ID] == nil {
				seen[s.ID] = make(map[int]bool)
			}
			pids := found[s.ID]
			var fromFiles []int
			if round == 0 {
				fromFiles = pidFiles(s.Dir)
				pids = append(slices.Clone(fromFiles), pids...)
			}
			for _, pid := range pids {
				if seen[s.ID][pid] {
					continue
				}
				seen[s.ID][pid] = true
				res, err := killVerified(ctx, pid, s.ID)
				switch res {
				case killKilled:
					killed = true
					if !slices.Contains(s.Killed, pid) {
						s.Killed = append(s.Killed, pid)
					}
				case killForeign:
					// A pid the scan found carried the id a moment ago; if
					// it no longer does it has just exited. Only pid files
					// can name a stranger.
					if err == nil && slices.Contains(fromFiles, pid) && !slices.Contains(s.Foreign, pid) {
						s.Foreign = append(s.Foreign, pid)
						log.Warn("pid file of a dead run names an unrelated process; left alone", "run", s.ID, "pid", pid)
					}
				}
				if err != nil {
					failed[s.ID] = errors.Join(failed[s.ID], err)
				}
			}
		}
		if !killed || ctx.Err() != nil {
			break
		}
	}

	var out Reaped
	var errs []error
	for _, s := range stale {
		if err := failed[s.ID]; err != nil {
			errs = append(errs, fmt.Errorf("reap run %s: %w", s.ID, err))
		} else if _, err := os.Lstat(filepath.Join(s.Dir, keepFile)); err == nil {
			s.Kept = true
		} else if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("reap run %s: %w", s.ID, err))
		} else {
			s.Removed = true
		}
		// A kept run with nothing left to kill was reported when it was
		// first found; it is not news on every later call.
		if !s.Removed && len(s.Killed) == 0 && len(s.Foreign) == 0 {
			continue
		}
		slices.Sort(s.Killed)
		slices.Sort(s.Foreign)
		log.Info("reaped stale run", "run", s.ID, "killed", s.Killed, "removed", s.Removed, "kept", s.Kept)
		out.Runs = append(out.Runs, *s)
	}
	return out, errors.Join(errs...)
}

// ownerGone reports whether the runner that owns the run in dir has died.
func ownerGone(dir string, log *slog.Logger) bool {
	owner, err := readOwner(dir)
	if errors.Is(err, fs.ErrNotExist) {
		fi, serr := os.Stat(dir)
		return serr == nil && time.Since(fi.ModTime()) > orphanGrace
	}
	if err != nil {
		// We write the record atomically; a bad one was not written by us.
		log.Warn("unreadable owner record; run left alone", "dir", dir, "err", err)
		return false
	}
	return !ownerAlive(owner)
}

// pidFiles returns the pids recorded in dir/nodes/*/pid.
func pidFiles(dir string) []int {
	nodes, _ := os.ReadDir(filepath.Join(dir, nodesDir))
	var pids []int
	for _, n := range nodes {
		b, err := os.ReadFile(filepath.Join(dir, nodesDir, n.Name(), "pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}
