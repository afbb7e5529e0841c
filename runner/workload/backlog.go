package workload

import "sync"

// backlog hands open-loop arrivals from the dispatcher to workers. Because an
// arrival's due time is a pure function of its index (ArrivalSchedule.At),
// the queue needs no storage: it is the range of indexes [claimed, released)
// that are due but not yet taken. It is unbounded at no cost and its depth is
// one subtraction.
//
// Workers with nothing to take park on wake. Every park is registered in idle
// under the lock, and whoever unregisters a parked worker sends it exactly
// one token, so wake never holds more tokens than there are workers and the
// sends never block.
type backlog struct {
	mu       sync.Mutex
	released int64 // arrivals due so far
	claimed  int64 // arrivals taken by workers
	idle     int   // parked workers owed no token yet
	closed   bool  // nothing more will be released
	expire   bool  // drain cutoff passed: take arrivals without sending them
	maxDepth int64
	wake     chan struct{}
}

func newBacklog(maxWorkers int) *backlog {
	return &backlog{wake: make(chan struct{}, maxWorkers)}
}

// release makes n more arrivals due and wakes parked workers for them. It
// returns how many new workers (at most spare) the dispatcher should start
// for arrivals that no free worker will take.
func (b *backlog) release(n int64, spare int) (spawn int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.released += n
	waiting := b.released - b.claimed
	woken := min(waiting, int64(b.idle))
	b.unpark(int(woken))
	short := waiting - woken
	spawn = int(min(short, int64(spare)))
	// Only arrivals that found every worker busy count as queued: handing one
	// to a parked or brand-new worker is not waiting.
	b.maxDepth = max(b.maxDepth, short-int64(spawn))
	return spawn
}

func (b *backlog) unpark(n int) {
	b.idle -= n
	for range n {
		b.wake <- struct{}{}
	}
}

// take returns the next due arrival, parking until there is one; ok is false
// once the backlog is closed and empty. expired reports that the arrival's
// drain cutoff has passed, so it must be recorded, not sent. parked reports
// that the worker had to wait for it: it was idle when the arrival was
// released.
func (b *backlog) take() (k int64, expired, parked, ok bool) {
	for {
		b.mu.Lock()
		if b.claimed < b.released {
			k, expired = b.claimed, b.expire
			b.claimed++
			b.mu.Unlock()
			return k, expired, parked, true
		}
		if b.closed {
			b.mu.Unlock()
			return 0, false, parked, false
		}
		b.idle++
		b.mu.Unlock()
		<-b.wake
		parked = true
	}
}

// close says nothing more will be released: workers drain what is due, then
// exit. With drop, what is due but untaken is discarded and its count returned.
func (b *backlog) close(drop bool) (dropped int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if drop {
		dropped = b.released - b.claimed
		b.claimed = b.released
	}
	b.unpark(b.idle)
	return dropped
}

// expireRest marks every arrival still untaken as expired.
func (b *backlog) expireRest() {
	b.mu.Lock()
	b.expire = true
	b.mu.Unlock()
}

func (b *backlog) depth() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxDepth
}
