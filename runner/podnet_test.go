package runner

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/netcut"
	"github.com/coordlab/scenario/plan"
)

// fakePod records the rules it was given.
type fakePod struct{ got []netcut.Rules }

func (f *fakePod) SetCuts(_ context.Context, r netcut.Rules) error {
	f.got = append(f.got, r)
	return nil
}

func TestPodRules(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	// Hosts: two node pods, a worker pod, the observer (no address).
	addrs := []netip.Addr{a("10.0.0.1"), a("10.0.0.2"), a("10.0.0.3"), {}}
	n1, n2 := &fakePod{}, &fakePod{}
	pods := []cutter{n1, n2, nil, nil}
	for _, tc := range []struct {
		name string
		cuts map[[2]int]bool
		want []netcut.Rules
	}{
		{"none", nil, []netcut.Rules{{}, {}, {}, {}}},
		{"node to node, dropped at the destination's input", map[[2]int]bool{{0, 1}: false},
			[]netcut.Rules{{}, {In: []netcut.Cut{{Addr: a("10.0.0.1")}}}, {}, {}}},
		{"both ways, rejected", map[[2]int]bool{{0, 1}: true, {1, 0}: true},
			[]netcut.Rules{{In: []netcut.Cut{{Addr: a("10.0.0.2"), Reject: true}}}, {In: []netcut.Cut{{Addr: a("10.0.0.1"), Reject: true}}}, {}, {}}},
		{"worker to node at the node's input, node to worker at its output", map[[2]int]bool{{2, 0}: false, {0, 2}: false},
			[]netcut.Rules{{In: []netcut.Cut{{Addr: a("10.0.0.3")}}, Out: []netcut.Cut{{Addr: a("10.0.0.3")}}}, {}, {}, {}}},
		{"the observer is never cut", map[[2]int]bool{{3, 0}: false, {0, 3}: false}, []netcut.Rules{{}, {}, {}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podRules(tc.cuts, addrs, pods); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rules\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	// setLinks sends each pod its rules only when they change.
	p := newPodLinks(addrs, pods)
	ctx := context.Background()
	cut := []linkChange{{from: 0, to: 1, link: shaper.Link{Down: true}}}
	for range 2 {
		if err := p.setLinks(ctx, cut); err != nil {
			t.Fatal(err)
		}
	}
	if len(n1.got) != 0 || len(n2.got) != 1 {
		t.Errorf("after a cut set twice: n1 got %d rule sets, n2 %d; want 0 and 1", len(n1.got), len(n2.got))
	}
	if err := p.setLinks(ctx, []linkChange{{from: 0, to: 1}}); err != nil {
		t.Fatal(err)
	}
	if len(n2.got) != 2 || !n2.got[1].Empty() {
		t.Errorf("after the heal n2 got %+v, want its rules emptied", n2.got)
	}
	err := p.setLinks(ctx, []linkChange{{from: 0, to: 1, link: shaper.Link{Delay: 5}}})
	if err == nil || !strings.Contains(err.Error(), "netem") {
		t.Errorf("a shaped link: %v, want a refusal naming netem", err)
	}
}

// TestPodRulesRefuseShaping: rules in pods cut links but shape none, so a
// scenario that shapes is refused before anything starts.
func TestPodRulesRefuseShaping(t *testing.T) {
	build, diags := dsl.Load(hclparse.NewParser(), "test.hcl", []byte(geoCluster+`
phase "p" {
  duration = "2s"
  load "w" {}
}
`), dsl.VarOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	opts := Options{Provider: plan.ProviderKubernetes, Kube: KubeOptions{Network: KubeNetworkPods}, StateDir: t.TempDir(), OutDir: t.TempDir()}
	_, err := Run(t.Context(), build.Plans[0], opts)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "needs netem in each pod") || !strings.Contains(err.Error(), "the network block") {
		t.Fatalf("shaping with rules in pods: %v, want an UnsupportedError naming netem and the network block", err)
	}
}
