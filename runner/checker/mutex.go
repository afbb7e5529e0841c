package checker

import (
	"fmt"
	"slices"
	"time"
)

// Hold is one contender's belief that it held a lock, from when its
// acquisition returned to when it let go (sent its release) or learned
// that its session was gone, whichever came first.
type Hold struct {
	Contender int           `json:"contender"`
	From      time.Duration `json:"from"`
	To        time.Duration `json:"to"`
	// Lost says the holder learned of its session's end before it let go.
	Lost bool `json:"lost,omitempty"`
}

// Overlap is two holders who believed they held the lock at once.
type Overlap struct {
	A      Hold          `json:"a"`
	B      Hold          `json:"b"`
	For    time.Duration `json:"for"`
	Detail string        `json:"detail"`
}

// CheckMutex reports every pair of holds by different contenders whose
// intervals overlap. A lock recipe without fencing tokens cannot prevent
// this when a holder stops (a GC pause, a frozen VM) past its lease: the
// store gives the lock to the next contender while the first still
// believes it holds it.
func CheckMutex(holds []Hold) []Overlap {
	hs := slices.Clone(holds)
	slices.SortFunc(hs, func(a, b Hold) int {
		switch {
		case a.From < b.From:
			return -1
		case a.From > b.From:
			return 1
		}
		return a.Contender - b.Contender
	})
	out := []Overlap{}
	for i := range hs {
		for j := i + 1; j < len(hs) && hs[j].From < hs[i].To; j++ {
			if hs[j].Contender == hs[i].Contender {
				continue
			}
			d := min(hs[i].To, hs[j].To) - hs[j].From
			out = append(out, Overlap{A: hs[i], B: hs[j], For: d, Detail: fmt.Sprintf(
				"contender %d believed it held the lock from %v to %v; contender %d acquired it at %v: both held it for %v",
				hs[i].Contender, hs[i].From, hs[i].To, hs[j].Contender, hs[j].From, d)})
		}
	}
	return out
}
