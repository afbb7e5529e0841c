package etcd

import (
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

// TestWorkloadConfigDefaults: a workload's connections are clientv3's
// defaults unless the scenario declares otherwise. With keepalive on,
// grpc-go sets TCP_USER_TIMEOUT to the keepalive timeout, which turned a
// partition into a reset within 3 s when the runner set 10 s / 3 s behind
// the user's back.
func TestWorkloadConfigDefaults(t *testing.T) {
	eps := []string{"http://127.0.0.1:2379"}
	def := workloadConfig(eps, nil, plan.ClientSpec{})
	if def.DialKeepAliveTime != 0 || def.DialKeepAliveTimeout != 0 || len(def.DialOptions) != 0 {
		t.Errorf("defaults: keepalive %v/%v, %d dial options; want clientv3's (none)", def.DialKeepAliveTime, def.DialKeepAliveTimeout, len(def.DialOptions))
	}
	if def.MaxUnaryRetries != 0 {
		t.Errorf("max attempts %d, want 0 (clientv3's default)", def.MaxUnaryRetries)
	}
	for retries, attempts := range map[int]uint{0: 1, 3: 4} {
		if got := workloadConfig(eps, nil, plan.ClientSpec{Retries: new(retries)}).MaxUnaryRetries; got != attempts {
			t.Errorf("retries = %d: max attempts %d, want %d", retries, got, attempts)
		}
	}
	set := workloadConfig(eps, nil, plan.ClientSpec{
		KeepaliveTime: plan.Duration(10 * time.Second), KeepaliveTimeout: plan.Duration(3 * time.Second),
		ReconnectBackoffMax: plan.Duration(time.Second),
	})
	if set.DialKeepAliveTime != 10*time.Second || set.DialKeepAliveTimeout != 3*time.Second || len(set.DialOptions) != 1 {
		t.Errorf("declared: keepalive %v/%v, %d dial options", set.DialKeepAliveTime, set.DialKeepAliveTimeout, len(set.DialOptions))
	}
	s := ClientSettings(plan.ClientSpec{})
	if s["keepalive_time"] != "off (clientv3 default)" || s["reconnect_backoff_max"] == "" || !strings.HasPrefix(s["retries"], "99 (clientv3 default") {
		t.Errorf("settings described as %v", s)
	}
	if s := ClientSettings(plan.ClientSpec{Retries: new(0)}); s["retries"] != "0: each operation is sent once" {
		t.Errorf("retries = 0 described as %q", s["retries"])
	}
	for _, c := range []struct {
		spec plan.ClientSpec
		want string
	}{
		{plan.ClientSpec{}, "false (clientv3 default"},
		{plan.ClientSpec{RequireLeader: new(true)}, "true (writes and linearizable"},
		{plan.ClientSpec{RequireLeader: new(false)}, "false (clientv3 default"},
	} {
		if got := ClientSettings(c.spec)["require_leader"]; !strings.HasPrefix(got, c.want) {
			t.Errorf("require_leader %v described as %q, want %q...", c.spec.RequireLeader, got, c.want)
		}
	}
}
