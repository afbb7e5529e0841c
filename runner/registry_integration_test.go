package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// TestCoordinationWorkloads runs a service registry, three lock
// contenders and 2000 held watches beside a key-value writer on etcd and
// ZooKeeper: instances register, heartbeat and churn while watchers watch;
// three instances vanish without a word while the lock's holder is paused
// past its TTL; then the leader is killed. The watchers must have been
// told of every change as the store promises, the vanished instances must
// disappear about a TTL after their last heartbeat, the paused holder must
// be replaced and seen overlapping its successor, and the writer's
// history must stay linearizable.
// (Consul's registry, whose sessions take a TTL of 10 s at least, is
// tested in stores/consul and by scenarios/service-registry.hcl.)
func TestCoordinationWorkloads(t *testing.T) {
	cases := []struct {
		store, cluster string
		ttl            time.Duration
	}{
		{plan.StoreEtcd, `cluster "main" {
  store = "etcd"
  nodes = 3
}
`, 2 * time.Second},
		{plan.StoreZooKeeper, `cluster "main" {
  store = "zookeeper"
  nodes = 3
  zookeeper {
    tick_time = "500ms"
  }
}
`, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel() // see storeCases
			needStore(t, tc.store)
			vanishFor := 2*tc.ttl + 2*time.Second
			// The writer's keys are watched too, as configuration is.
			writer := strings.Replace(writerWorkload(tc.store), "keyspace    = 200", "keyspace    = 200\n  watchers    = 3", 1)
			src := tc.cluster + writer + fmt.Sprintf(`
workload "svc" {
  clients = 8
  timeout = "2s"
  registry {
    instances = 20
    ttl       = %[1]q
    heartbeat = "500ms"
    watchers  = 3
    churn     = 2
  }
}

workload "locks" {
  timeout = "2s"
  lock {
    contenders = 3
    ttl        = %[1]q
    hold       = "200ms"
  }
}

workload "fleet" {
  clients = 16
  conns   = 2
  watches {
    keys = 2000
  }
}

phase "steady" {
  duration = "5s"
  load "writer" {}
  load "svc" {}
  load "locks" {}
  load "fleet" {}
}

phase "vanish" {
  duration = %[2]q
  load "writer" {}
  load "svc" {}
  load "locks" {}
  load "fleet" {}
  fault "vanish" {
    workload = "svc"
    count    = 3
    at       = "1s"
    duration = %[3]q
  }
  fault "pause" {
    workload = "locks"
    at       = "1s"
    duration = %[3]q
  }
}

phase "kill" {
  duration = "10s"
  load "writer" {}
  load "svc" {}
  load "locks" {}
  load "fleet" {}
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "3s"
  }
}
`, plan.Duration(tc.ttl), plan.Duration(vanishFor+2*time.Second), plan.Duration(vanishFor))
			res := runScenario(t, src)
			if len(res.Registries) != 1 {
				t.Fatalf("registries in the results: %+v", res.Registries)
			}
			g := res.Registries[0]
			t.Logf("registry: %+v", g)
			if g.Registered != 20 || g.RegistrationsPerS <= 0 {
				t.Errorf("registered %d at %.0f/s; want all 20", g.Registered, g.RegistrationsPerS)
			}
			if !g.Watch.OK || g.Watch.Events == 0 {
				t.Errorf("watch verdict %+v; want kept promises over some events", g.Watch)
			}
			steady := phase(t, res, "steady")
			svc := workloadStats(t, steady, "svc")
			for _, op := range []string{plan.OpRegister, plan.OpKeepalive, plan.OpDeregister, plan.OpNotify, plan.OpFanout} {
				o := opOf(svc, op)
				if o == nil || o.OK == 0 || o.Errors != 0 {
					t.Errorf("steady: %s: %+v; want successes only", op, o)
					continue
				}
				t.Logf("steady: %s: %d, p50 %.1f ms, p99 %.1f ms", op, o.OK, o.Latency.P50MS, o.Latency.P99MS)
			}
			if n := opOf(workloadStats(t, steady, "writer"), plan.OpPut); n == nil || n.OK == 0 {
				t.Errorf("steady: the writer wrote nothing beside the registry")
			}
			// The writer's watchers: every write told, through the
			// vanish and the leader kill, and the checker satisfied.
			if len(res.KeyWatches) != 1 {
				t.Fatalf("key watches in the results: %+v", res.KeyWatches)
			}
			kw := res.KeyWatches[0]
			t.Logf("key watch: %+v", kw)
			if !kw.Watch.OK || kw.Writes == 0 || kw.FannedOut == 0 {
				t.Errorf("key watch %+v; want kept promises and writes fanned out", kw)
			}
			for _, op := range []string{plan.OpNotify, plan.OpFanout} {
				if o := opOf(workloadStats(t, steady, "writer"), op); o == nil || o.OK == 0 {
					t.Errorf("steady: the writer's watchers: no %s: %+v", op, o)
				}
			}
			var sum int64
			for _, w := range steady.Workloads {
				sum += w.Total.Count
			}
			if steady.Total.Count != sum {
				t.Errorf("steady: phase total %d is not its workloads' (notifications must stay out of it)", steady.Total.Count)
			}

			if g.Vanished != 3 || g.Detected != 3 {
				t.Errorf("vanished %d, detected %d; want 3 and 3", g.Vanished, g.Detected)
			}
			d := opOf(workloadStats(t, phase(t, res, "vanish"), "svc"), plan.OpDetect)
			if d == nil || d.OK != 3 {
				t.Fatalf("vanish: detections %+v; want 3", d)
			}
			// From the last heartbeat the store heard, an instance must
			// last its TTL, and not much more.
			ttl := float64(tc.ttl.Milliseconds())
			if raw := d.RawLatency; raw.MinMS < 0.9*ttl || raw.MaxMS > ttl+2000 {
				t.Errorf("vanish: detected %.0f-%.0f ms after the last heartbeat; want about the TTL, %.0f ms", raw.MinMS, raw.MaxMS, ttl)
			}
			t.Logf("vanish: detected p50 %.0f ms after falling silent, %.0f-%.0f ms after the last heartbeat (ttl %.0f ms)",
				d.Latency.P50MS, d.RawLatency.MinMS, d.RawLatency.MaxMS, ttl)
			if kill := phase(t, res, "kill"); kill.Elections < 1 {
				t.Errorf("kill: %d elections; want the leader replaced", kill.Elections)
			}

			// The lock: turns taken in the steady phase; the holder paused
			// past its TTL is replaced by the store, and the checker
			// shows that both believed they held the lock.
			if len(res.Locks) != 1 {
				t.Fatalf("locks in the results: %+v", res.Locks)
			}
			l := res.Locks[0]
			t.Logf("lock: %+v", l)
			locks := workloadStats(t, steady, "locks")
			if h := opOf(locks, plan.OpHandover); h == nil || h.OK < 3 || h.Latency.P99MS > 1000 {
				t.Errorf("steady: lock handovers %+v; want several, each under a second", h)
			}
			tk := opOf(workloadStats(t, phase(t, res, "vanish"), "locks"), plan.OpTakeover)
			if tk == nil || tk.OK != 1 || tk.Latency.MaxMS > 2*ttl+2000 {
				t.Errorf("vanish: takeovers %+v; want one, within about the TTL (%.0f ms) of the pause", tk, ttl)
			} else {
				t.Logf("vanish: the lock was taken over %.0f ms after its holder paused (ttl %.0f ms)", tk.Latency.MaxMS, ttl)
			}
			if l.Paused != 1 || l.MutexOK || l.Overlaps == 0 || l.OverlapsFile == "" {
				t.Errorf("the paused holder overlapped the next, but the verdict is %+v", l)
			}

			if len(res.Watches) != 1 || res.Watches[0].Held != 2000 || res.Watches[0].Error != "" {
				t.Errorf("watches held: %+v; want 2000", res.Watches)
			}
		})
	}
}

func opOf(w *results.WorkloadStats, op string) *results.OpStats {
	for i := range w.Ops {
		if w.Ops[i].Op == op {
			return &w.Ops[i]
		}
	}
	return nil
}
