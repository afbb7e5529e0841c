package checker

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/coordlab/scenario/plan"
)

// Verdicts of CheckLinearizable.
const (
	Linearizable = "linearizable"
	Violation    = "violation"
	Unknown      = "unknown"
)

// maxOffending bounds LinResult.Offending: enough to read a violation in
// context, small enough for results.json.
const maxOffending = 200

// LinResult is the outcome of a linearizability check.
type LinResult struct {
	// Verdict is Linearizable, Violation or Unknown (the checker ran out of
	// time or was cancelled; never read it as a pass).
	Verdict string
	// Operations is the number of operations checked.
	Operations int
	// Keys is the number of keys checked.
	Keys int
	// Detail explains the verdict in a sentence.
	Detail string
	// Visualization is the path of porcupine's HTML report, when written.
	Visualization string
	// Offending holds operations on the keys whose history could not be
	// linearized, around the point where linearization got stuck, at most
	// maxOffending of them in call order.
	Offending []Entry
}

// input is what a porcupine operation asks of a key's register.
type input struct {
	op    string // plan.OpPut, plan.OpTxn, plan.OpDelete or plan.OpGet
	key   string
	value string // written, for put and txn
}

// output is what a get observed; writes have no output to check.
type output struct {
	value string
	found bool
}

// register is the state of one key.
type register struct {
	value  string
	exists bool
}

// model is a register per key. Partitioning by key lets porcupine check
// keys independently, which is what keeps the search tractable.
func model() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			_, parts := partitionByKey(h)
			return parts
		},
		// Every key starts absent: Preload's writes are recorded too.
		Init: func() any { return register{} },
		Step: func(state, in, out any) (bool, any) {
			s, i := state.(register), in.(input)
			switch i.op {
			case plan.OpPut, plan.OpTxn:
				return true, register{value: i.value, exists: true}
			case plan.OpDelete:
				return true, register{}
			}
			o := out.(output)
			return o.found == s.exists && (!o.found || o.value == s.value), s
		},
		Hash: func(state any) uint64 {
			s := state.(register)
			h := fnv.New64a()
			h.Write([]byte(s.value))
			if s.exists {
				h.Write([]byte{1})
			}
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string {
			i := in.(input)
			switch i.op {
			case plan.OpGet:
				o := out.(output)
				if !o.found {
					return fmt.Sprintf("get(%q) -> absent", i.key)
				}
				return fmt.Sprintf("get(%q) -> %s", i.key, short(o.value))
			case plan.OpDelete:
				return fmt.Sprintf("delete(%q)", i.key)
			}
			return fmt.Sprintf("%s(%q, %s)", i.op, i.key, short(i.value))
		},
		DescribeState: func(state any) string {
			s := state.(register)
			if !s.exists {
				return "absent"
			}
			return short(s.value)
		},
		DescribeOperationMetadata: func(info any) string {
			e := info.(*Entry)
			d := fmt.Sprintf("workload %s, client %d", e.Workload, e.ClientID)
			if e.Class != "" {
				d += ", failed: " + e.Class
			}
			return d
		},
	}
}

// short quotes v, cut to a length that fits a visualization box.
func short(v string) string {
	const max = 24
	if len(v) > max {
		return fmt.Sprintf("%q...", v[:max])
	}
	return fmt.Sprintf("%q", v)
}

// partitionByKey groups operations by key, keys in sorted order so that
// partition indices are reproducible.
func partitionByKey(h []porcupine.Operation) ([]string, [][]porcupine.Operation) {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range h {
		k := op.Input.(input).key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		parts[i] = byKey[k]
	}
	return keys, parts
}

// operations turns the history into porcupine operations:
//
//   - successful put, txn, delete and get are checked as they are;
//   - a write that failed with an indeterminate class (timeout, connection,
//     unavailable) may or may not have taken effect, so, as etcd's robustness
//     suite does, it never returns: its Return is pushed past the end of the
//     history, letting porcupine place it anywhere after its call or, in
//     effect, nowhere. Each gets a client id of its own, since its client
//     went on to send other operations while it was still "pending";
//   - but an indeterminate put or txn whose value no successful get
//     returned is dropped: values are unique per write, so if it took
//     effect nothing saw it, and a history is linearizable with it iff it
//     is without it. A leader change under a closed loop leaves thousands
//     of such writes (one per fast refusal), each of which would multiply
//     porcupine's search;
//   - failed gets observed nothing, and writes failed with class "other"
//     are taken as definitely not applied; both are dropped;
//   - range operations are not modelled and are dropped.
//
// Client ids are renumbered densely from zero, per (workload, ClientID).
func operations(h []Entry) ([]porcupine.Operation, error) {
	var end time.Duration
	for _, e := range h {
		if e.Return < e.Call {
			return nil, fmt.Errorf("%s on %q by workload %s client %d: returned at %v, before its call at %v",
				e.Op, e.Key, e.Workload, e.ClientID, e.Return, e.Call)
		}
		end = max(end, e.Return)
	}
	type read struct{ key, value string }
	observed := map[read]bool{}
	for i := range h {
		if e := &h[i]; e.Op == plan.OpGet && e.Class == "" && e.Found {
			observed[read{e.Key, string(e.Value)}] = true
		}
	}
	type client struct {
		workload string
		id       int
	}
	clients := map[client]int{}
	var pending []int // indices into ops of indeterminate writes
	var ops []porcupine.Operation
	for i := range h {
		e := &h[i]
		if !modelled(e.Op) {
			continue
		}
		ret := e.Return
		if e.Class != "" {
			if !isWrite(e.Op) || !indeterminate(e.Class) {
				continue
			}
			if e.Op != plan.OpDelete && !observed[read{e.Key, string(e.Value)}] {
				continue
			}
			ret = end + 1
		}
		c := client{e.Workload, e.ClientID}
		id, ok := clients[c]
		if !ok {
			id = len(clients)
			clients[c] = id
		}
		if e.Class != "" {
			pending = append(pending, len(ops))
		}
		op := porcupine.Operation{
			ClientId: id,
			Input:    input{op: e.Op, key: e.Key, value: string(e.Value)},
			Call:     int64(e.Call),
			Return:   int64(ret),
			Metadata: e,
		}
		if e.Op == plan.OpGet {
			op.Output = output{value: string(e.Value), found: e.Found}
		}
		ops = append(ops, op)
	}
	// Fresh ids come after every real client's, so they never collide.
	for n, i := range pending {
		ops[i].ClientId = len(clients) + n
	}
	return ops, nil
}

// CheckLinearizable checks that h is linearizable, key by key, as described
// on operations. The check stops after timeout (0 or less: no limit) or at ctx's
// deadline, whichever comes first, and then reports Unknown; a cancelled ctx
// also gives Unknown. On a violation, porcupine's HTML visualization is
// written to vizPath unless it is empty. An error means the history was
// malformed or the visualization could not be written; in the latter case
// the result is still valid and returned with the error.
func CheckLinearizable(ctx context.Context, h []Entry, timeout time.Duration, vizPath string) (LinResult, error) {
	ops, err := operations(h)
	if err != nil {
		return LinResult{}, fmt.Errorf("checking linearizability: %w", err)
	}
	keys, parts := partitionByKey(ops)
	res := LinResult{Operations: len(ops), Keys: len(keys)}
	limit := max(timeout, 0)
	d, hasDeadline := ctx.Deadline()
	if left := time.Until(d); hasDeadline && (limit == 0 || left < limit) {
		limit = left
	}
	if ctx.Err() != nil || (hasDeadline && limit <= 0) {
		// Porcupine reads a zero timeout as "no limit", so a spent budget
		// must not reach it.
		res.Verdict, res.Detail = Unknown, unknownDetail(res, ctxCause(ctx))
		return res, nil
	}

	m := model()
	// Porcupine has no context of its own. Once ctx ends, every step fails,
	// which unwinds its search quickly instead of
	// leaving it running; the answer it then gives is meaningless and is
	// discarded below.
	checked, done := m, ctx.Done()
	checked.Step = func(state, in, out any) (bool, any) {
		select {
		case <-done:
			return false, state
		default:
			return m.Step(state, in, out)
		}
	}
	result, info := porcupine.CheckOperationsVerbose(checked, ops, limit)
	switch {
	case ctx.Err() != nil:
		res.Verdict, res.Detail = Unknown, unknownDetail(res, ctxCause(ctx))
		return res, nil
	case result == porcupine.Ok:
		res.Verdict = Linearizable
		res.Detail = fmt.Sprintf("%d operations on %d keys are linearizable.", res.Operations, res.Keys)
		return res, nil
	case result == porcupine.Unknown:
		res.Verdict = Unknown
		res.Detail = unknownDetail(res, fmt.Sprintf("the checker gave up after %v", limit))
		return res, nil
	}

	res.Verdict = Violation
	failed, stuck := failedPartitions(parts, info.PartialLinearizations())
	bad := make([]string, len(failed))
	for i, p := range failed {
		bad[i] = keys[p]
	}
	res.Offending = offending(h, bad, stuck)
	res.Detail = fmt.Sprintf("%d operations on %d keys are not linearizable: no valid order exists for %d keys, first %q.",
		res.Operations, res.Keys, len(bad), firstOr(bad, ""))
	if vizPath == "" {
		return res, nil
	}
	if err := porcupine.VisualizePath(m, info, vizPath); err != nil {
		return res, fmt.Errorf("writing linearizability visualization: %w", err)
	}
	res.Visualization = vizPath
	return res, nil
}

// failedPartitions returns the partitions with no complete linearization and,
// for each, the time the longest partial linearization got stuck at: the
// earliest return among the operations it could not place. Porcupine does not
// say which partitions failed, but a partition that passed always has a
// linearization covering all its operations.
func failedPartitions(parts [][]porcupine.Operation, partials [][][]int) (failed []int, stuck []int64) {
	for p, ops := range parts {
		longest := []int(nil)
		if p < len(partials) {
			for _, l := range partials[p] {
				if len(l) > len(longest) {
					longest = l
				}
			}
		}
		if len(longest) == len(ops) {
			continue
		}
		placed := make([]bool, len(ops))
		for _, id := range longest {
			placed[id] = true
		}
		at := int64(-1)
		for id, op := range ops {
			if !placed[id] && (at < 0 || op.Return < at) {
				at = op.Return
			}
		}
		failed, stuck = append(failed, p), append(stuck, at)
	}
	return failed, stuck
}

// offending picks, for each bad key, the operations of h on it nearest to
// where linearization got stuck, sharing maxOffending between the keys.
func offending(h []Entry, bad []string, stuck []int64) []Entry {
	if len(bad) == 0 {
		return nil
	}
	per := max(maxOffending/len(bad), 1)
	var out []Entry
	for i, k := range bad {
		if len(out) >= maxOffending {
			break
		}
		var on []Entry
		for _, e := range h {
			if e.Key == k {
				on = append(on, e)
			}
		}
		slices.SortStableFunc(on, func(a, b Entry) int { return cmp.Compare(a.Call, b.Call) })
		// Centre the window on the first operation called after the
		// stuck point: the violation is among its neighbours.
		at, _ := slices.BinarySearchFunc(on, time.Duration(stuck[i]), func(e Entry, t time.Duration) int { return cmp.Compare(e.Call, t) })
		n := min(per, len(on), maxOffending-len(out))
		lo := min(max(at-n/2, 0), len(on)-n)
		out = append(out, on[lo:lo+n]...)
	}
	return out
}

func unknownDetail(res LinResult, why string) string {
	return fmt.Sprintf("Linearizability of %d operations on %d keys is unknown: %s.", res.Operations, res.Keys, why)
}

func ctxCause(ctx context.Context) string {
	if err := context.Cause(ctx); err != nil {
		return "the check was stopped (" + err.Error() + ")"
	}
	return "the check's deadline had passed"
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}
