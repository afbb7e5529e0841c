package checker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/coordlab/scenario/plan"
)

// store is what a read-back returns: key -> value; a missing key is absent.
type store map[string]string

func (s store) read(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := s[key]
	return []byte(v), ok, nil
}

func TestCheckLostWrites(t *testing.T) {
	tests := []struct {
		name    string
		history []Entry
		store   store
		want    LostResult
	}{
		{
			name:    "acknowledged write present",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3), get(1, "b", 4, 5)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "acknowledged write missing",
			history: []Entry{put(0, "a", 0, 1)},
			store:   store{},
			want:    LostResult{Checked: 1, Lost: 1, Keys: []string{"k"}},
		},
		{
			name:    "older value read back",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3)},
			store:   store{"k": "a"},
			want:    LostResult{Checked: 1, Lost: 1, Keys: []string{"k"}},
		},
		{
			name:    "overlapping write may be last",
			history: []Entry{put(0, "a", 0, 10), put(1, "b", 1, 5)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "indeterminate write not applied",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrTimeout)},
			store:   store{"k": "a"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "indeterminate write applied",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrTimeout)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "indeterminate write applied after a later acknowledged one",
			history: []Entry{put(0, "b", 0, 1).failed(plan.ErrConnection), put(0, "a", 2, 3)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "neither acknowledged nor indeterminate value",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrUnavailable)},
			store:   store{"k": "c"},
			want:    LostResult{Checked: 1, Lost: 1, Keys: []string{"k"}},
		},
		{
			name:    "refused write is not a candidate",
			history: []Entry{put(0, "a", 0, 1), put(0, "b", 2, 3).failed(plan.ErrOther)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1, Lost: 1, Keys: []string{"k"}},
		},
		{
			name:    "acknowledged delete",
			history: []Entry{put(0, "a", 0, 1), del(0, 2, 3)},
			store:   store{},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "deleted value read back",
			history: []Entry{put(0, "a", 0, 1), del(0, 2, 3)},
			store:   store{"k": "a"},
			want:    LostResult{Checked: 1, Lost: 1, Keys: []string{"k"}},
		},
		{
			name:    "txn counts as a write",
			history: []Entry{put(0, "a", 0, 1), txn(0, "b", 2, 3)},
			store:   store{"k": "b"},
			want:    LostResult{Checked: 1},
		},
		{
			name:    "no acknowledged write is not checked",
			history: []Entry{put(0, "a", 0, 1).failed(plan.ErrTimeout), get(0, "a", 2, 3).on("read-only")},
			store:   store{},
			want:    LostResult{},
		},
		{
			name: "lost keys sorted",
			history: []Entry{
				put(0, "a", 0, 1).on("z"), put(0, "a", 0, 1).on("y"), put(0, "a", 0, 1).on("x"),
			},
			store: store{"y": "a"},
			want:  LostResult{Checked: 3, Lost: 2, Keys: []string{"x", "z"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckLostWrites(context.Background(), tt.history, tt.store.read)
			if err != nil {
				t.Fatalf("CheckLostWrites: %v", err)
			}
			if got.Checked != tt.want.Checked || got.Lost != tt.want.Lost || !slices.Equal(got.Keys, tt.want.Keys) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCheckLostWritesErrors(t *testing.T) {
	errDown := errors.New("store down")
	failing := func(context.Context, string) ([]byte, bool, error) { return nil, false, errDown }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		read func(context.Context, string) ([]byte, bool, error)
		is   error
	}{
		{"read error names the key", context.Background(), failing, errDown},
		{"cancelled context", cancelled, store{}.read, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckLostWrites(tt.ctx, []Entry{put(0, "a", 0, 1).on("key-1")}, tt.read)
			if !errors.Is(err, tt.is) {
				t.Fatalf("got error %v, want %v", err, tt.is)
			}
			if tt.is == errDown && !strings.Contains(err.Error(), `"key-1"`) {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
}
