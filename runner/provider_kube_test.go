package runner

import (
	"testing"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/kube"
)

func TestKubePlacement(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flag   string
		block  *plan.KubernetesSpec
		region string
		want   kube.Placement
	}{
		{name: "nothing: anywhere", region: "us-east"},
		{name: "the flag: the region's own name", flag: "topology.kubernetes.io/region", region: "us-east",
			want: kube.Placement{Label: "topology.kubernetes.io/region", Value: "us-east"}},
		{name: "a map in the file", block: &plan.KubernetesSpec{RegionLabel: plan.DefaultRegionLabel, Regions: map[string]string{"us-east": "us-east-1"}}, region: "us-east",
			want: kube.Placement{Label: plan.DefaultRegionLabel, Value: "us-east-1"}},
		{name: "the file's label over the flag's", flag: "a/b", block: &plan.KubernetesSpec{RegionLabel: "topology.kubernetes.io/zone", Regions: map[string]string{"eu": "eu-west-1b"}}, region: "eu",
			want: kube.Placement{Label: "topology.kubernetes.io/zone", Value: "eu-west-1b"}},
		{name: "a region the map leaves out: its own name", block: &plan.KubernetesSpec{RegionLabel: "zone", Regions: map[string]string{"eu": "eu-1"}}, region: "clients",
			want: kube.Placement{Label: "zone", Value: "clients"}},
		{name: "a block with storage only: the flag", flag: "region", block: &plan.KubernetesSpec{StorageClass: "ssd"}, region: "us",
			want: kube.Placement{Label: "region", Value: "us"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := &execution{opts: Options{Kube: KubeOptions{RegionLabel: tc.flag}}}
			k := &kubeProvider{c: &clusterRun{x: x, spec: plan.ClusterSpec{Kubernetes: tc.block}}}
			if got := k.placement(tc.region); got != tc.want {
				t.Errorf("placement(%q) = %+v, want %+v", tc.region, got, tc.want)
			}
		})
	}
}
