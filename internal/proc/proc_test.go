package proc

import (
	"os"
	"os/exec"
	"testing"
)

func TestAlive(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), true},
		{"init, not ours to signal", 1, true},
		{"an exited, reaped child", dead.Process.Pid, false},
		{"zero", 0, false},
		{"negative", -1, false},
	}
	for _, tt := range tests {
		if got := Alive(tt.pid); got != tt.want {
			t.Errorf("%s: Alive(%d) = %v, want %v", tt.name, tt.pid, got, tt.want)
		}
	}
}
