package promscrape

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

const exposition = "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 2.5\nh_count 3\n# TYPE c counter\nc 7\n"

// Scrape asks for the text format, reads it over one connection scrape
// after scrape, and refuses any other answer saying why.
func TestScrape(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		{name: "exposition", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" || r.URL.Query().Get("format") != "prometheus" || !strings.HasPrefix(r.Header.Get("Accept"), "text/plain;version=0.0.4") {
				http.Error(w, "wrong request "+r.URL.String()+" "+r.Header.Get("Accept"), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write([]byte(exposition))
		}},
		{name: "error", wantErr: "GET /metrics: 500 Internal Server Error: boom", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}},
		{name: "protobuf", wantErr: `GET /metrics: answered "application/vnd.google.protobuf", not Prometheus text`, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.google.protobuf")
		}},
		// What Consul 1.20.2 answers without prometheus_retention_time.
		{name: "prometheus off", wantErr: `answered "application/json", not Prometheus text: Prometheus is not enabled since its retention time is not positive`, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Consul-Reason", "Prometheus is not enabled since its retention time is not positive")
		}},
		{name: "malformed", wantErr: "GET /metrics: text format parsing error in line 2", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write([]byte("c 1\nc{ 2\n"))
		}},
		{name: "wrong type", wantErr: "GET /metrics: family h is a gauge, not a histogram (metric lat)", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("# TYPE c gauge\nc 1\n# TYPE h gauge\nh 1\n")) // c may be a gauge, h may not
		}},
	}
	ms := []Metric{
		{stores.ServerMetric{Name: "lat", Kind: stores.MetricHistogram}, []string{"h"}},
		{stores.ServerMetric{Name: "n", Kind: stores.MetricCounter}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.handler)
			var conns atomic.Int32 // the server's goroutines count them
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			c := &http.Client{Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			for range 2 {
				got, err := Scrape(context.Background(), c, srv.URL+"/metrics?format=prometheus", ms)
				if storetest.CheckErr(t, err, tt.wantErr) {
					return
				}
				if h, n := got["lat"], got["n"]; h.Count != 3 || h.Sum != 2.5 || len(h.Buckets) != 2 || n.Value != 7 || len(got) != 2 {
					t.Errorf("Scrape = %+v; want lat count 3, sum 2.5 in 2 buckets, n 7", got)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("two scrapes took %d connections; want 1", n)
			}
		})
	}
}

// A scrape of an address where nothing listens fails at once; one of a
// server that accepts but never answers fails at Timeout, or at the
// context's deadline.
func TestScrapeFailsFast(t *testing.T) {
	deadAddr, muteAddr := storetest.FreeAddrs(t, 1)[0], storetest.MuteAddr(t)
	tests := []struct {
		name     string
		addr     string
		deadline time.Duration // of the context, none if 0
		max      time.Duration
	}{
		{name: "dead", addr: deadAddr, max: time.Second},
		{name: "mute", addr: muteAddr, max: Timeout + time.Second},
		{name: "mute with a deadline", addr: muteAddr, deadline: 200 * time.Millisecond, max: Timeout - time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			c := &http.Client{Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			storetest.CheckFailsWithin(t, "scrape", tt.max, func() error {
				_, err := Scrape(ctx, c, "http://"+tt.addr+"/metrics", nil)
				return err
			})
		})
	}
}
