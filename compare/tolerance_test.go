package compare

import (
	"math"
	"strings"
	"testing"
)

func TestParseTolerance(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		want    Tolerance
		wantErr string
	}{
		{name: "ignore", spec: "ignore", want: Tolerance{Ignore: true}},
		{name: "relative rise", spec: "+10%", want: Tolerance{Sign: 1, Rel: 0.1}},
		{name: "relative drop", spec: "-10%", want: Tolerance{Sign: -1, Rel: 0.1}},
		{name: "percentage points", spec: "-0.1pt", want: Tolerance{Sign: -1, Abs: 0.001}},
		{name: "relative with a duration floor", spec: "+20%,100ms", want: Tolerance{Sign: 1, Rel: 0.2, Abs: 100}},
		{name: "floor first, blanks around parts", spec: " +1.5s , 20% ", want: Tolerance{Sign: 1, Rel: 0.2, Abs: 1500}},
		{name: "microseconds", spec: "+250us", want: Tolerance{Sign: 1, Abs: 0.25}},
		{name: "zero", spec: "+0", want: Tolerance{Sign: 1}},
		{name: "plain number", spec: "-5", want: Tolerance{Sign: -1, Abs: 5}},
		{name: "unsigned", spec: "10%", want: Tolerance{Rel: 0.1}},
		{name: "empty", spec: "", wantErr: "want ignore, or an allowance"},
		{name: "sign alone", spec: "+", wantErr: "want ignore, or an allowance"},
		{name: "two percentages", spec: "+10%,20%", wantErr: "more than one percentage"},
		{name: "two floors", spec: "+10%,1ms,2ms", wantErr: "more than one absolute amount"},
		{name: "negative amount", spec: "+-5%", wantErr: `"-5" is not a non-negative number`},
		{name: "negative duration", spec: "+-1ms", wantErr: `"-1ms" is not an amount`},
		{name: "not a number", spec: "+abc", wantErr: `"abc" is not an amount`},
		{name: "NaN", spec: "+NaN%", wantErr: "not a non-negative number"},
		{name: "infinite", spec: "+Inf", wantErr: "not an amount"},
		{name: "ignore with an amount", spec: "ignore,5%", wantErr: `"ignore" is not an amount`},
		{name: "empty part", spec: "+10%,", wantErr: `"" is not an amount`},
		{name: "a drop of all of it", spec: "-100%", want: Tolerance{Sign: -1, Rel: 1}},
		{name: "a drop of more than all of it", spec: "-101%", wantErr: "cannot drop by more than 100%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTolerance(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTolerance(%q) error = %v, want one containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTolerance(%q): %v", tt.spec, err)
			}
			if got.Ignore != tt.want.Ignore || got.Sign != tt.want.Sign || !near(got.Rel, tt.want.Rel) || !near(got.Abs, tt.want.Abs) {
				t.Errorf("ParseTolerance(%q) = %+v, want %+v", tt.spec, got, tt.want)
			}
			if got.String() != strings.TrimSpace(tt.spec) {
				t.Errorf("String() = %q, want the spec as written", got.String())
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestParseRule(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantPattern string
		wantSpec    string
		wantErr     string
	}{
		{name: "glob", in: "phase.*.put.p99=+5%", wantPattern: "phase.*.put.p99", wantSpec: "+5%"},
		{name: "comma in the spec", in: "*.failover_time=+50%,500ms", wantPattern: "*.failover_time", wantSpec: "+50%,500ms"},
		{name: "check name with an equals sign", in: "check.put p99 <= 5ms=ignore", wantPattern: "check.put p99 <= 5ms", wantSpec: "ignore"},
		{name: "no equals sign", in: "*.p99", wantErr: "want PATTERN=SPEC"},
		{name: "empty pattern", in: "=+5%", wantErr: "empty PATTERN"},
		{name: "empty spec", in: "*.p99=", wantErr: "want ignore, or an allowance"},
		{name: "bad spec", in: "*.p99=fast", wantErr: `"fast" is not an amount`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRule(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRule(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tt.in, err)
			}
			if got.Pattern != tt.wantPattern || got.Tolerance.String() != tt.wantSpec {
				t.Errorf("ParseRule(%q) = %q=%q, want %q=%q", tt.in, got.Pattern, got.Tolerance, tt.wantPattern, tt.wantSpec)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, metric string
		want            bool
	}{
		{"*.p99", "phase.steady.put.p99", true},
		{"*.p99", "phase.steady.put.p999", false},
		{"*.p99", "run.p99", true},
		{"phase.*.put.p99", "phase.steady.put.p99", true},
		{"phase.*.put.p99", "phase.steady.workload.w.put.p99", true}, // '*' crosses dots
		{"phase.*.put.p99", "run.put.p99", false},
		{"*.max", "phase.failover.max_gap", false},
		{"check.*", "check.a/b c", true}, // '/' is not special
		{"run.p?0", "run.p50", true},
		{"run.p?0", "run.p500", false},
		{"check.caf?", "check.café", true}, // '?' is one character, not one byte
		{"a*b*c", "aXXbYc", true},
		{"a*b*c", "abcbd", false},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"run.*", "run", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.metric); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.metric, got, tt.want)
		}
	}
}

func TestDefaultRulesParse(t *testing.T) {
	// DefaultRules panics on a bad entry; calling it is the test.
	if len(DefaultRules()) == 0 {
		t.Fatal("no default rules")
	}
}
