package discovery

import (
	"sync"
	"time"

	"github.com/coordlab/scenario/runner/metrics"
)

// recorder times one workload's requests and observations into one sink
// from many goroutines, and drops what was due after the workload's last
// load: its own cleanup, outside every phase.
type recorder struct {
	workload string
	end      time.Duration
	classify func(error) string

	mu   sync.Mutex
	sink metrics.Sink
}

func newRecorder(workload string, end time.Duration, sink metrics.Sink, classify func(error) string) *recorder {
	return &recorder{workload: workload, end: end, sink: sink, classify: classify}
}

func (r *recorder) record(s metrics.Sample) {
	if s.Intended >= r.end {
		return
	}
	s.Workload = r.workload
	r.mu.Lock()
	r.sink.Record(s)
	r.mu.Unlock()
}

// request times one request, due at intended, sent at start.
func (r *recorder) request(op string, intended, start, end time.Duration, err error) {
	s := metrics.Sample{Op: op, Intended: intended, Start: start, End: end}
	if err != nil {
		s.Class = r.classify(err)
	}
	r.record(s)
}

// observe times one observation: from sent (latency) and from acked (raw
// latency) to at. What was seen before the acknowledgement arrived counts
// as seen at it.
func (r *recorder) observe(op string, sent, acked, at time.Duration) {
	r.record(metrics.Sample{Op: op, Intended: sent, Start: min(acked, at), End: at})
}
