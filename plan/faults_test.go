package plan

import "testing"

func TestFaultKindOf(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range FaultKinds() {
		if seen[k.Name] {
			t.Errorf("fault kind %q listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Undo == "" {
			t.Errorf("fault kind %q: no Undo text", k.Name)
		}
		if k.TakesDown && !k.Silences {
			t.Errorf("fault kind %q takes its targets down but does not silence them", k.Name)
		}
		got, ok := FaultKindOf(k.Name)
		if !ok || got != k {
			t.Errorf("FaultKindOf(%q) = %+v, %v", k.Name, got, ok)
		}
	}
	if _, ok := FaultKindOf("flood"); ok {
		t.Error(`FaultKindOf("flood") found a kind`)
	}
}
