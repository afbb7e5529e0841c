package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// scriptedClient answers gets from a list of results, then the last one.
type scriptedClient struct {
	results []stores.Result
	calls   int
}

func (c *scriptedClient) Do(context.Context, stores.Op) stores.Result {
	r := c.results[min(c.calls, len(c.results)-1)]
	c.calls++
	return r
}

func (c *scriptedClient) Close() error { return nil }

func TestReadBack(t *testing.T) {
	refused := stores.Result{Err: errors.New("leader changed"), Class: plan.ErrUnavailable}
	timedOut := stores.Result{Err: errors.New("deadline"), Class: plan.ErrTimeout}
	found := stores.Result{Found: true, Value: []byte("v")}
	invalid := stores.Result{Err: errors.New("bad key"), Class: plan.ErrOther}
	tests := []struct {
		name    string
		results []stores.Result
		timeout time.Duration
		calls   int
		wantErr bool
	}{
		{"answered at once", []stores.Result{found}, time.Second, 1, false},
		{"refused, then answered", []stores.Result{refused, timedOut, found}, 5 * time.Second, 3, false},
		{"refused for good is not retried", []stores.Result{invalid, found}, time.Second, 1, true},
		{"gives up when the context ends", []stores.Result{refused}, 250 * time.Millisecond, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			cl := &scriptedClient{results: tt.results}
			v, ok, err := readBack(ctx, cl, "k")
			if (err != nil) != tt.wantErr {
				t.Fatalf("readBack: %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (!ok || string(v) != "v") {
				t.Errorf("readBack = %q, %v", v, ok)
			}
			if tt.calls > 0 && cl.calls != tt.calls {
				t.Errorf("%d reads, want %d", cl.calls, tt.calls)
			}
		})
	}
}
