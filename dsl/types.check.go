package dsl

import (
	"fmt"
	"strings"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

const (
	blockCheck = "check"

	scopePhase    = "phase"
	scopeRun      = "run"
	scopeCluster  = "cluster"
	scopeWorkload = "workload"
	scopeErrorsBy = "errors_by"
	scopeServer   = "server"
)

var checkSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "condition", Required: true}, {Name: "message"}, {Name: "abort_on_fail"},
}}

// Check is a decoded check block. Its condition is evaluated after the run.
type Check struct {
	Name        string
	Condition   hcl.Expression
	Message     string
	AbortOnFail bool
	DeclRange   hcl.Range
	source      []byte
}

func decodeCheck(block *hcl.Block, ctx *hcl.EvalContext, src []byte) (*Check, hcl.Diagnostics) {
	c := &Check{Name: block.Labels[0], DeclRange: block.DefRange, source: src}
	content, diags := decodeBody(block.Body, checkSchema)
	d := &decoder{ctx: ctx, diags: diags}
	if attr, ok := content.Attributes["condition"]; ok {
		c.Condition = attr.Expr
	}
	if attr, ok := content.Attributes["message"]; ok {
		c.Message, _ = d.str(attr)
	}
	if attr, ok := content.Attributes["abort_on_fail"]; ok {
		c.AbortOnFail, _ = d.boolean(attr)
	}
	return c, d.diags
}

// metricNode is one level of the check namespace: a leaf of some type, or an
// object whose children are the names allowed below it.
type metricNode struct {
	leaf     cty.Type
	children map[string]*metricNode
	// hint is said when a name below this node is unknown.
	hint string
}

func leaf(t cty.Type) *metricNode { return &metricNode{leaf: t} }

func object() *metricNode { return &metricNode{children: map[string]*metricNode{}} }

func statsNode(n *metricNode, stats []string) {
	for _, s := range stats {
		n.children[s] = leaf(cty.Number)
	}
	eb := object()
	for _, c := range plan.ErrorClasses {
		eb.children[c] = leaf(cty.Number)
	}
	n.children[scopeErrorsBy] = eb
}

func opNode(ops []string, into *metricNode) {
	for _, op := range ops {
		o := object()
		statsNode(o, plan.OpStats)
		into.children[op] = o
	}
}

// workloadStats are the totals available per workload.
var workloadStats = []string{plan.StatCount, plan.StatThroughput, plan.StatErrors, plan.StatErrorRate, plan.MetricAvailability, plan.MetricTimeAvail, plan.MetricMaxGap, plan.MetricLateStarts, plan.MetricLateShare, plan.MetricLateQueued}

// metricTree is every metric a check may read for plan: one subtree per phase
// (its ops are those of the workloads it loads) and one for the whole run.
// With several clusters, phase-wide and run-wide figures would mix stores,
// so those scopes keep only their workloads, and each cluster has the
// full tree of its own workloads under cluster.<name>.
func metricTree(p *plan.Plan) *metricNode {
	if len(p.Clusters) <= 1 {
		return clusterTree(p, "")
	}
	root := clusterTree(p, "")
	hint := fmt.Sprintf("With several clusters, only workload and network metrics are read here; the rest are per cluster, such as cluster.%s.phase.<name>.put.p99 or cluster.%s.run.availability.", p.Clusters[0].Name, p.Clusters[0].Name)
	for _, n := range root.children[scopePhase].children {
		onlyWorkloads(n, hint)
	}
	onlyWorkloads(root.children[scopeRun], hint)
	clusters := object()
	for _, c := range p.Clusters {
		t := clusterTree(p, c.Name)
		for _, n := range t.children[scopePhase].children {
			withoutNetwork(n)
		}
		withoutNetwork(t.children[scopeRun])
		clusters.children[c.Name] = t
	}
	root.children[scopeCluster] = clusters
	return root
}

// serverNode declares <scope>.server.<metric>.<stat>: the store's own
// metrics, for cluster, or for the plan's only cluster when cluster is "".
func serverNode(n *metricNode, p *plan.Plan, cluster string) {
	var store string
	for _, c := range p.Clusters {
		if c.Name == cluster || cluster == "" && len(p.Clusters) == 1 {
			store = c.Store
		}
	}
	drv, ok := registry.Lookup(store)
	if !ok || len(drv.ServerMetrics) == 0 {
		return
	}
	server := object()
	for _, m := range drv.ServerMetrics {
		one := object()
		for _, st := range stores.ServerStats(m.Kind) {
			one.children[st] = leaf(cty.Number)
		}
		server.children[m.Name] = one
	}
	n.children[scopeServer] = server
}

// onlyWorkloads drops every metric of n but its workloads' (and the
// correctness verdicts, which combine, and the network's, which the
// clusters share).
func onlyWorkloads(n *metricNode, hint string) {
	for name := range n.children {
		if name != scopeWorkload && name != plan.MetricLinearizable && name != plan.MetricLostWrites && !networkMetrics[name] {
			delete(n.children, name)
		}
	}
	n.hint = hint
}

// networkMetrics are the metrics of the network fabric, which every
// cluster of a plan shares: a run has them once, not per cluster.
var networkMetrics = map[string]bool{
	plan.MetricNetworkDrops: true, plan.MetricNetworkFrames: true, plan.MetricNetworkLateP99: true,
	plan.MetricNetworkLateMax: true, plan.MetricNetworkPair: true,
}

// withoutNetwork drops the network's metrics from a cluster's scope n.
func withoutNetwork(n *metricNode) {
	for name := range networkMetrics {
		delete(n.children, name)
	}
}

// pairNode declares network_pair.<from>.<to>.<stat> between every two of
// the hosts a run of the plan may have: every cluster's nodes, the clients
// of every region with workloads, and the load workers' pods of a run with
// the kubernetes provider (which --provider may choose after the checks
// are compiled, so they are declared whatever the file says).
func pairNode(p *plan.Plan) *metricNode {
	var hosts []string
	for _, c := range p.Clusters {
		for i := range c.Placement {
			hosts = append(hosts, p.NodeHost(c.Name, i+1))
		}
	}
	for _, r := range p.ClientRegions() {
		hosts = append(hosts, plan.ClientHost(r))
	}
	for _, w := range p.Workloads {
		for i := range w.WorkerCount() {
			hosts = append(hosts, plan.WorkerHost(w.Name, i))
		}
	}
	n := object()
	for _, from := range hosts {
		to := object()
		for _, h := range hosts {
			if h != from {
				stats := object()
				for _, st := range plan.PairStats {
					stats.children[st] = leaf(cty.Number)
				}
				to.children[h] = stats
			}
		}
		n.children[from] = to
	}
	return n
}

// clusterTree is the phase and run scopes over the workloads of cluster,
// or of every cluster when cluster is "".
func clusterTree(p *plan.Plan, cluster string) *metricNode {
	mixes := map[string][]string{}
	registries, locks, watches, watched := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, w := range p.Workloads {
		if cluster == "" || w.Cluster == cluster {
			mixes[w.Name] = w.Ops()
			registries[w.Name], locks[w.Name], watches[w.Name] = w.Registry != nil, w.Lock != nil, w.Watches != nil
			watched[w.Name] = w.Watchers > 0
		}
	}
	scope := func(workloads []string) *metricNode {
		n := object()
		statsNode(n, plan.PhaseStats)
		ops := map[string]bool{}
		wn := object()
		for _, w := range workloads {
			var wops []string
			for _, op := range mixes[w] {
				ops[op] = true
				wops = append(wops, op)
			}
			one := object()
			statsNode(one, workloadStats)
			opNode(wops, one)
			wn.children[w] = one
		}
		n.children[scopeWorkload] = wn
		var list []string
		for _, op := range plan.MeasuredOps {
			if ops[op] {
				list = append(list, op)
			}
		}
		opNode(list, n)
		return n
	}
	root := object()
	phases := object()
	pairs := pairNode(p) // read only: shared by the scopes
	all := map[string]bool{}
	for _, ph := range p.Phases {
		var ws []string
		for _, e := range p.Events {
			if e.Kind != plan.EventLoad || e.Phase != ph.Name {
				continue
			}
			if _, ok := mixes[e.Load.Workload]; ok {
				ws = append(ws, e.Load.Workload)
				all[e.Load.Workload] = true
			}
		}
		phases.children[ph.Name] = scope(ws)
		serverNode(phases.children[ph.Name], p, cluster)
		phases.children[ph.Name].children[plan.MetricNetworkPair] = pairs
	}
	root.children[scopePhase] = phases
	run := scope(sortedKeys(all))
	serverNode(run, p, cluster)
	run.children[plan.MetricNetworkPair] = pairs
	run.children[plan.MetricLinearizable] = leaf(cty.Bool)
	run.children[plan.MetricLostWrites] = leaf(cty.Number)
	for w := range all {
		if watches[w] {
			run.children[scopeWorkload].children[w].children[plan.MetricWatchesHeld] = leaf(cty.Number)
		}
		if locks[w] {
			wn := run.children[scopeWorkload].children[w]
			wn.children[plan.MetricMutexOK] = leaf(cty.Bool)
			wn.children[plan.MetricOverlaps] = leaf(cty.Number)
		}
		if watched[w] {
			run.children[plan.MetricWatchOK] = leaf(cty.Bool)
			run.children[scopeWorkload].children[w].children[plan.MetricWatchOK] = leaf(cty.Bool)
		}
		if !registries[w] {
			continue
		}
		run.children[plan.MetricWatchOK] = leaf(cty.Bool)
		wn := run.children[scopeWorkload].children[w]
		for _, m := range plan.RegistryMetrics {
			if m == plan.MetricWatchOK {
				wn.children[m] = leaf(cty.Bool)
			} else {
				wn.children[m] = leaf(cty.Number)
			}
		}
	}
	root.children[scopeRun] = run
	return root
}

// scopeValues is the namespace of checks: every root of tree, its leaves
// asked of at.
func scopeValues(tree *metricNode, at func([]string) cty.Value) map[string]cty.Value {
	out := map[string]cty.Value{}
	for name, n := range tree.children {
		out[name] = n.value([]string{name}, at)
	}
	return out
}

func (n *metricNode) names() []string { return sortedKeys(n.children) }

// resolve walks a traversal below the root name and returns the metric path,
// or a diagnostic at the step that names nothing.
func (n *metricNode) resolve(trav hcl.Traversal) ([]string, *hcl.Diagnostic) {
	path := []string{trav.RootName()}
	cur := n.children[trav.RootName()]
	for _, step := range trav[1:] {
		var name string
		switch s := step.(type) {
		case hcl.TraverseAttr:
			name = s.Name
		case hcl.TraverseIndex:
			if s.Key.Type() != cty.String {
				return nil, errorAt(s.SrcRange, "Invalid metric index", "Index metrics by name, such as phase[\"steady\"].")
			}
			name = s.Key.AsString()
		default:
			return nil, errorAt(step.SourceRange(), "Invalid metric reference", "Refer to metrics with dots, such as phase.steady.put.p99.")
		}
		if cur.children == nil {
			return nil, errorAt(step.SourceRange(), "Not an object",
				"%s is a single value; it has no %q.", strings.Join(path, "."), name)
		}
		next, ok := cur.children[name]
		if !ok && contains(plan.MeasuredOps, name) && cur.children[plan.MetricAvailability] != nil {
			// A real operation that nothing in this scope performs.
			return nil, errorAt(step.SourceRange(), "Operation not measured here",
				"No workload that %s covers has %q in its mix, so it has no %s metrics. %s", strings.Join(path, "."), name, name, opsHint(cur))
		}
		if !ok && networkMetrics[name] && len(path) >= 3 && path[0] == scopeCluster {
			// A cluster's scope: the network is the run's (withoutNetwork).
			return nil, errorAt(step.SourceRange(), "Network metric under a cluster",
				"The clusters share one network, so %s is the run's, not %s's: read it without %s, such as %s.%s.",
				name, path[1], strings.Join(path[:2], "."), strings.Join(path[2:], "."), name)
		}
		if !ok {
			return nil, errorAt(step.SourceRange(), "Unknown metric",
				"%s has no %q. %s", strings.Join(path, "."), name, strings.TrimSpace(didYouMean(name, cur.names())+" "+cur.hint))
		}
		path = append(path, name)
		cur = next
	}
	if cur.children != nil {
		return nil, errorAt(trav.SourceRange(), "Incomplete metric reference",
			"%s is a group of metrics; name one of them: %s.", strings.Join(path, "."), quoteList(cur.names()))
	}
	return path, nil
}

// opsHint lists the operations measured in a scope.
func opsHint(n *metricNode) string {
	var ops []string
	for _, op := range plan.MeasuredOps {
		if _, ok := n.children[op]; ok {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return "Nothing runs here: add a load to the phase."
	}
	return fmt.Sprintf("Operations measured here: %s.", quoteList(ops))
}

// value builds the namespace as a cty object, asking at for each leaf.
func (n *metricNode) value(path []string, at func([]string) cty.Value) cty.Value {
	if n.children == nil {
		v := at(path)
		if v == cty.NilVal {
			return cty.NullVal(n.leaf)
		}
		return v
	}
	attrs := map[string]cty.Value{}
	for name, c := range n.children {
		attrs[name] = c.value(append(append([]string(nil), path...), name), at)
	}
	return cty.ObjectVal(attrs)
}

// checkScope is what every check of one plan is compiled against, built
// once per plan: the metric tree and, on first use, the evaluation context
// with every metric unknown.
type checkScope struct {
	tree *metricNode
	ctx  *hcl.EvalContext
}

// compileCheck validates a check's references against the plan's metrics and
// type-checks the condition with every metric unknown.
func compileCheck(c *Check, sc *checkScope, vars map[string]cty.Value) (plan.CheckSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	tree := sc.tree
	spec := plan.CheckSpec{Name: c.Name, Message: c.Message, AbortOnFail: c.AbortOnFail}
	if c.Condition == nil {
		return spec, diags
	}
	rng := c.Condition.Range()
	spec.Pos = plan.Pos{File: rng.Filename, Line: rng.Start.Line, Column: rng.Start.Column}
	if rng.End.Byte <= len(c.source) && rng.Start.Byte <= rng.End.Byte {
		spec.Condition = string(c.source[rng.Start.Byte:rng.End.Byte])
	}
	seen := map[string]bool{}
	for _, trav := range c.Condition.Variables() {
		root := trav.RootName()
		if root == "var" {
			continue
		}
		if _, ok := tree.children[root]; !ok {
			roots := append(tree.names(), "var")
			diags = append(diags, errorAt(trav[0].SourceRange(), "Unknown name in check",
				"A check reads metrics under %s, and variables under `var`; %q is none of these. %s", scopesText(tree), root, didYouMean(root, roots)))
			continue
		}
		if len(trav) == 1 {
			diags = append(diags, errorAt(trav.SourceRange(), "Incomplete metric reference",
				"Name a metric, such as `phase.steady.put.p99` or `run.availability`."))
			continue
		}
		if root == scopePhase {
			if s, ok := trav[1].(hcl.TraverseAttr); ok {
				if _, ok := tree.children[scopePhase].children[s.Name]; !ok {
					diags = append(diags, errorAt(s.SrcRange, "Unknown phase",
						"No phase is named %q. %s", s.Name, didYouMean(s.Name, tree.children[scopePhase].names())))
					continue
				}
			}
		}
		path, diag := tree.resolve(trav)
		if diag != nil {
			diags = append(diags, diag)
			continue
		}
		key := strings.Join(path, ".")
		if !seen[key] {
			seen[key] = true
			spec.Refs = append(spec.Refs, key)
		}
	}
	if diags.HasErrors() {
		return spec, diags
	}
	if sc.ctx == nil {
		sc.ctx = evalContext(vars, scopeValues(tree, unknownLeaf(tree)))
	}
	v, vdiags := c.Condition.Value(sc.ctx)
	diags = append(diags, vdiags...)
	if !vdiags.HasErrors() {
		if _, err := convert.Convert(v, cty.Bool); err != nil {
			diags = append(diags, errorAt(rng, "Condition is not true or false",
				"A check's condition must be a comparison, such as `phase.steady.put.p99 < ms(250)`; this one is %s.", v.Type().FriendlyName()))
		}
	}
	return spec, diags
}

// scopesText names the roots of a check's metrics.
func scopesText(tree *metricNode) string {
	if _, ok := tree.children[scopeCluster]; ok {
		return "`phase.<name>`, `run` or `cluster.<name>`"
	}
	return "`phase.<name>` or `run`"
}

func unknownLeaf(tree *metricNode) func([]string) cty.Value {
	return func(path []string) cty.Value {
		n := tree
		for _, p := range path {
			n = n.children[p]
		}
		return cty.UnknownVal(n.leaf)
	}
}

// CheckOutcome is the result of evaluating one check after a run.
type CheckOutcome struct {
	Passed   bool
	Observed []Observed
	// Err is set when the condition could not be evaluated (for example a
	// metric that was never measured): such a check fails.
	Err error
}

// Observed is the value a check's metric had.
type Observed struct {
	Path  string
	Value cty.Value
}

// EvalCheck evaluates a compiled check. at returns the measured value of a
// metric path (such as ["phase", "steady", "put", "p99"]), or cty.NilVal when
// it was not measured, which makes any comparison with it fail.
func EvalCheck(p *plan.Plan, c plan.CheckSpec, at func(path []string) cty.Value) CheckOutcome {
	var out CheckOutcome
	tree := metricTree(p)
	var unmeasured []string
	for _, ref := range c.Refs {
		v := at(strings.Split(ref, "."))
		if v == cty.NilVal || v.IsNull() {
			v = cty.NullVal(cty.Number)
			unmeasured = append(unmeasured, ref)
		}
		out.Observed = append(out.Observed, Observed{Path: ref, Value: v})
	}
	// A condition over a metric nobody measured has no answer, and must not
	// pass by accident: HCL reads `null && x` as false and `null || true`
	// as true. Such a check fails, and says why.
	if len(unmeasured) > 0 {
		out.Err = fmt.Errorf("not measured: %s", strings.Join(unmeasured, ", "))
		return out
	}
	expr, diags := hclsyntax.ParseExpression([]byte(c.Condition), c.Pos.File, hcl.Pos{Line: c.Pos.Line, Column: c.Pos.Column, Byte: 0})
	if diags.HasErrors() {
		out.Err = fmt.Errorf("parse condition: %s", diags.Error())
		return out
	}
	vars, err := variableValues(p)
	if err != nil {
		out.Err = err
		return out
	}
	ctx := evalContext(vars, scopeValues(tree, at))
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		out.Err = fmt.Errorf("%s", diagsText(diags))
		return out
	}
	b, err := convert.Convert(v, cty.Bool)
	switch {
	case err != nil:
		out.Err = fmt.Errorf("condition is %s, not true or false", v.Type().FriendlyName())
	case b.IsNull() || !b.IsKnown():
		out.Err = fmt.Errorf("condition has no value: a metric it reads was not measured")
	default:
		out.Passed = b.True()
	}
	return out
}

func diagsText(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			parts = append(parts, strings.TrimSuffix(d.Summary+": "+d.Detail, "."))
		}
	}
	return strings.Join(parts, "; ")
}

// variableValues re-reads the variables saved in the plan as HCL literals.
func variableValues(p *plan.Plan) (map[string]cty.Value, error) {
	vars := map[string]cty.Value{}
	for name, lit := range p.Variables {
		expr, diags := hclsyntax.ParseExpression([]byte(lit), "var."+name, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, fmt.Errorf("variable %s: %s", name, diags.Error())
		}
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			return nil, fmt.Errorf("variable %s: %s", name, diags.Error())
		}
		vars[name] = v
	}
	return vars, nil
}

// literal renders a value as HCL source.
func literal(v cty.Value) string {
	return strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes()))
}
