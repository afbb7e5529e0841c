package stores

import (
	"context"
	"testing"
	"time"
)

func TestOpContext(t *testing.T) {
	t.Parallel()
	withDeadline, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ownDeadline, _ := withDeadline.Deadline()
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		wantDeadline bool
		wantOwn      bool // the caller's deadline, not one OpContext added
	}{
		{"bare: the op's timeout applies", context.Background(), true, false},
		{"caller's deadline kept", withDeadline, true, true},
		{"caller times out: no deadline", WithCallerTimeout(context.Background()), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := OpContext(tc.ctx, time.Hour)
			defer cancel()
			d, ok := ctx.Deadline()
			if ok != tc.wantDeadline {
				t.Fatalf("deadline %v, %v; want one: %v", d, ok, tc.wantDeadline)
			}
			if tc.wantOwn && !d.Equal(ownDeadline) {
				t.Errorf("deadline %v, want the caller's %v", d, ownDeadline)
			}
			if ok && !tc.wantOwn && time.Until(d) < 59*time.Minute {
				t.Errorf("deadline in %v, want the hour's timeout", time.Until(d))
			}
		})
	}
}
