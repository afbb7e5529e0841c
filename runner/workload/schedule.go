package workload

import (
	"iter"
	"math"
	"math/bits"
	"time"

	"github.com/coordlab/scenario/plan"
)

// ArrivalSchedule is the open-loop timetable of one load: the offset, from
// the start of the load, at which each request is due. The rate goes linearly
// from RateFrom to RateTo over Duration (a constant rate when they are equal),
// so the number of arrivals due by t is N(t) = from·t + c·t², with
// c = (to-from)/(2·Duration), and arrival k is due when N(t) = k:
//
//	t_k = 2k / (from + sqrt(from² + 4ck))
//
// which is the root of c·t² + from·t − k = 0 written so that it neither
// divides by c (constant rate) nor loses precision when from is 0. Arrival 0
// is due at offset 0; arrivals due at or after Duration are not part of the
// schedule. Computing t_k directly, instead of summing intervals, keeps every
// arrival exact however long the load and lets workers find an arrival's
// time from its index alone.
type ArrivalSchedule struct {
	dur   time.Duration
	from  float64 // arrivals per second at offset 0
	accel float64 // c above, in arrivals per second²
	next  int64
}

// Arrivals returns the schedule of an open-loop load. A load with a negative
// or non-finite rate, or no duration, has no arrivals.
func Arrivals(l plan.LoadSpec) ArrivalSchedule {
	d := l.Duration.D()
	ok := func(r float64) bool { return r >= 0 && !math.IsInf(r, 0) }
	if d <= 0 || !ok(l.RateFrom) || !ok(l.RateTo) || (l.RateFrom == 0 && l.RateTo == 0) {
		return ArrivalSchedule{}
	}
	s := ArrivalSchedule{dur: d, from: l.RateFrom}
	if l.RateTo != l.RateFrom {
		s.accel = (l.RateTo - l.RateFrom) / (2 * d.Seconds())
	}
	return s
}

// At returns when arrival k is due, and false when the schedule has no
// arrival k. It does not depend on Next.
func (s ArrivalSchedule) At(k int64) (time.Duration, bool) {
	if k < 0 || s.dur <= 0 {
		return 0, false
	}
	var ns float64
	switch {
	case k == 0:
		ns = 0
	case s.accel == 0:
		ns = float64(k) * 1e9 / s.from
	default:
		disc := s.from*s.from + 4*s.accel*float64(k)
		if disc < 0 { // a falling ramp never reaches k
			return 0, false
		}
		ns = 2 * float64(k) * 1e9 / (s.from + math.Sqrt(disc))
	}
	if !(ns < float64(s.dur)) {
		return 0, false
	}
	t := time.Duration(math.Round(ns))
	if t >= s.dur {
		return 0, false
	}
	return t, true
}

// Next returns the next arrival's due offset, and false once the schedule is
// exhausted. It allocates nothing.
func (s *ArrivalSchedule) Next() (time.Duration, bool) {
	t, ok := s.At(s.next)
	if ok {
		s.next++
	}
	return t, ok
}

// Len is the number of arrivals in the schedule.
func (s ArrivalSchedule) Len() int64 {
	if s.dur <= 0 {
		return 0
	}
	d := s.dur.Seconds()
	n := int64(math.Ceil(s.from*d + s.accel*d*d)) // N(Duration), rounded up
	for n > 0 {
		if _, ok := s.At(n - 1); ok {
			break
		}
		n--
	}
	for {
		if _, ok := s.At(n); !ok {
			return n
		}
		n++
	}
}

// All yields every arrival's index and due offset, from the first, whatever
// Next has consumed.
func (s ArrivalSchedule) All() iter.Seq2[int64, time.Duration] {
	return func(yield func(int64, time.Duration) bool) {
		for k := int64(0); ; k++ {
			t, ok := s.At(k)
			if !ok || !yield(k, t) {
				return
			}
		}
	}
}

// ClientStep is one change of a closed-loop load: from offset At (from the
// start of the load) on, Clients workers run.
type ClientStep struct {
	At      time.Duration
	Clients int
}

// ClientSteps returns the closed-loop schedule of a load, like k6's
// ramping-vus: the count starts at ClientsFrom and moves by one each time the
// line from ClientsFrom to ClientsTo over Duration crosses the next integer,
// at offset Duration·i/|to−from| (truncated to the nanosecond). A change that
// would fall at or after Duration is left out: the load is over by then.
func ClientSteps(l plan.LoadSpec) []ClientStep {
	from, to, d := l.ClientsFrom, l.ClientsTo, l.Duration.D()
	steps := []ClientStep{{At: 0, Clients: from}}
	if from == to || d <= 0 {
		return steps
	}
	diff, dir := to-from, 1
	if diff < 0 {
		diff, dir = -diff, -1
	}
	for i := 1; i <= diff; i++ {
		hi, lo := bits.Mul64(uint64(d), uint64(i))
		q, _ := bits.Div64(hi, lo, uint64(diff)) // i <= diff, so no overflow
		at := time.Duration(q)
		if at >= d {
			break
		}
		if at == steps[len(steps)-1].At {
			steps[len(steps)-1].Clients = from + dir*i
			continue
		}
		steps = append(steps, ClientStep{At: at, Clients: from + dir*i})
	}
	return steps
}
