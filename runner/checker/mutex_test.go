package checker

import "testing"

func TestCheckMutex(t *testing.T) {
	cases := []struct {
		name  string
		holds []Hold
		want  int
	}{
		{"one after another", []Hold{{1, ms(0), ms(10), false}, {2, ms(10), ms(20), false}, {3, ms(25), ms(30), false}}, 0},
		{"a paused holder overlapped", []Hold{{1, ms(0), ms(100), false}, {2, ms(60), ms(80), false}, {3, ms(90), ms(120), false}}, 2},
		{"the same contender twice", []Hold{{1, ms(0), ms(10), false}, {1, ms(5), ms(20), false}}, 0},
		{"none", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckMutex(tc.holds)
			if len(got) != tc.want {
				t.Fatalf("%d overlaps, want %d: %+v", len(got), tc.want, got)
			}
			for _, o := range got {
				if o.For <= 0 || o.A.Contender == o.B.Contender {
					t.Errorf("overlap %+v", o)
				}
			}
		})
	}
}
