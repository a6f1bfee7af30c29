package db

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// MultiGet's helper goroutines.
//
// A MultiGet's block reads (spread) can be shared with other goroutines.
// A goroutine started for each batch begins only once the scheduler has
// woken an idle processor for it, and that wake is what decides whether a
// helper is any use: a batch of 64 present keys whose blocks are in the
// block cache takes about 60–100 µs, and on the machine these figures come
// from (a virtual machine inside another) a wake took 67 µs (median of
// 2,000), so the helpers started per batch arrived when the batch was all
// but done. On bare metal a wake takes a few microseconds.
//
// So a DB keeps its helpers (Options.MultiGetParallelism less one) from
// its first MultiGet that needs them until Close. A helper that finishes
// a batch polls for the next one for a while before it sleeps:
// back-to-back MultiGets find it awake, and a MultiGet after a pause
// wakes it as before and runs meanwhile without it. It polls for as long
// as wakes have been taking (a moving average, held between 5 and
// 100 µs): the rule for renting skis until their price is spent, so that
// the processor time spent polling in vain is at most about what waking
// would have cost in delay. Polling yields the processor
// (runtime.Gosched) every 16 looks, so runnable goroutines are not kept
// waiting by it.

const (
	minHelperSpin     = 5 * time.Microsecond
	maxHelperSpin     = 100 * time.Microsecond
	initialHelperSpin = 20 * time.Microsecond
)

// helperEpoch is the origin of mgHelpers' clock (monotonic nanoseconds).
var helperEpoch = time.Now()

func helperNow() int64 { return int64(time.Since(helperEpoch)) }

// mgHelpers is a DB's pool of MultiGet helpers.
type mgHelpers struct {
	n      int                   // helper goroutines, started by the first post
	cur    atomic.Pointer[mgJob] // the job helpers join, or nil
	ids    atomic.Uint64         // job numbers
	parked atomic.Int32          // helpers asleep (or about to be) on wake
	// wake holds tokens, each waking one parked helper: the time it was
	// sent (helperNow). Its capacity is n.
	wake chan int64
	// spin is how long an idle helper polls, in nanoseconds: a moving
	// average of the wakes' delays, clamped.
	spin atomic.Int64
	// helped counts the lookups the helpers ran (tests read it).
	helped atomic.Int64

	mu      sync.Mutex // guards started and stopped
	started bool
	stopped bool
	// live is started && !stopped, read without mu by every post.
	live     atomic.Bool
	quitting atomic.Bool
	quit     chan struct{} // closed by stop
	wg       sync.WaitGroup
}

// newMGHelpers returns a pool of n helpers, none started yet.
func newMGHelpers(n int) *mgHelpers {
	h := &mgHelpers{n: n, wake: make(chan int64, n), quit: make(chan struct{})}
	h.spin.Store(int64(initialHelperSpin))
	return h
}

// mgJob is one spread: lookups 0..n-1 of a MultiGet, taken in turn by the
// caller and any helper that joins.
type mgJob struct {
	id     uint64
	mg     *multiGet
	do     func(mg *multiGet, t int, seek []byte)
	n      int64
	next   atomic.Int64  // the next lookup to take
	refs   atomic.Int32  // helpers inside the job
	closed atomic.Bool   // the caller has taken the last lookup and left
	done   chan struct{} // capacity 1: the last helper out of a closed job
}

// run takes and does lookups until none is left, returning how many.
func (j *mgJob) run(seek []byte) int64 {
	var did int64
	for {
		t := j.next.Add(1) - 1
		if t >= j.n {
			return did
		}
		j.do(j.mg, int(t), seek)
		did++
	}
}

// help joins j from a helper. A helper that joins after the caller closed
// the job touches nothing of it but refs, closed and done: the caller may
// have returned, and its multiGet may serve another call already.
func (j *mgJob) help(seek []byte) int64 {
	var did int64
	j.refs.Add(1)
	if !j.closed.Load() {
		did = j.run(seek)
	}
	if j.refs.Add(-1) == 0 && j.closed.Load() {
		select {
		case j.done <- struct{}{}:
		default:
		}
	}
	return did
}

// do runs the n lookups of mg through do, with the caller and the helpers
// taking them from a shared counter, and returns once all are done and no
// helper is inside the job. want is the most helpers to wake if they
// sleep; helpers already awake join whatever want says.
func (h *mgHelpers) do(mg *multiGet, n, want int, do func(mg *multiGet, t int, seek []byte)) {
	j := &mgJob{id: h.ids.Add(1), mg: mg, do: do, n: int64(n), done: make(chan struct{}, 1)}
	h.post(j, want)
	j.run(mg.seek[:0])
	// Every lookup is taken: helpers that join from now on find none.
	j.closed.Store(true)
	h.cur.CompareAndSwap(j, nil)
	// A helper still inside finishes one lookup, a few microseconds:
	// wait for it polling, yielding now and then (with one processor the
	// helper needs this one). Sleeping would let this processor go idle
	// and the scheduler run the helper's loop on it, leaving this
	// goroutine to wait for another processor to be woken: on the machine
	// of the figures, helpers did 29-37% of the lookups that way, and
	// 45-49% this way.
	if j.refs.Load() != 0 {
		deadline := helperNow() + int64(maxHelperSpin)
		for turn := 1; j.refs.Load() != 0; turn++ {
			if turn%64 == 0 {
				if helperNow() > deadline {
					<-j.done
					break
				}
				runtime.Gosched()
			}
		}
	}
}

// post offers j to the helpers, starting them the first time and waking
// up to want of those asleep.
func (h *mgHelpers) post(j *mgJob, want int) {
	if !h.ensureStarted() {
		return
	}
	h.cur.Store(j)
	// A helper going to sleep counts itself in parked before it looks at
	// cur a last time: either it sees j, or this sees it parked.
	if k := min(want, int(h.parked.Load())); k > 0 {
		now := helperNow()
		for ; k > 0; k-- {
			select {
			case h.wake <- now:
			default:
				return
			}
		}
	}
}

// ensureStarted starts the helpers unless they run or the pool stopped,
// and reports whether they run.
func (h *mgHelpers) ensureStarted() bool {
	if h.live.Load() {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started && !h.stopped {
		h.started = true
		h.live.Store(true)
		h.wg.Add(h.n)
		for range h.n {
			go h.loop()
		}
	}
	return h.started && !h.stopped
}

// loop is a helper: it joins every new job, polls between jobs for up to
// the spin time, then sleeps until woken or stopped.
func (h *mgHelpers) loop() {
	defer h.wg.Done()
	// A helper counts in cpuLoad.awake but while it sleeps.
	cpuLoad.awake.Add(1)
	defer cpuLoad.awake.Add(-1)
	var seek [64]byte
	var last uint64 // the id of the last job joined
	for {
		idle := helperNow()
		for turn := 1; ; turn++ {
			if j := h.cur.Load(); j != nil && j.id != last {
				last = j.id
				if did := j.help(seek[:0]); did > 0 {
					h.helped.Add(did)
				}
				idle = helperNow()
				continue
			}
			if h.quitting.Load() {
				return
			}
			if turn%16 == 0 {
				if helperNow()-idle > h.spin.Load() {
					break
				}
				runtime.Gosched()
			}
		}
		h.parked.Add(1)
		cpuLoad.awake.Add(-1)
		if j := h.cur.Load(); j != nil && j.id != last || h.quitting.Load() {
			h.parked.Add(-1)
			cpuLoad.awake.Add(1)
			continue
		}
		select {
		case sent := <-h.wake:
			h.parked.Add(-1)
			cpuLoad.awake.Add(1)
			// A token can be stale (sent to a helper that found the job
			// before it slept), so one delay moves the average a quarter.
			d := min(max(helperNow()-sent, int64(minHelperSpin)), int64(maxHelperSpin))
			h.spin.Store((3*h.spin.Load() + d) / 4)
		case <-h.quit:
			h.parked.Add(-1)
			cpuLoad.awake.Add(1)
			return
		}
	}
}

// stop ends the helpers and waits for them; no MultiGet may be running
// (Close calls it once reads have drained). Later posts find no helper and
// leave the work to their callers.
func (h *mgHelpers) stop() {
	h.mu.Lock()
	started := h.started && !h.stopped
	h.stopped = true
	h.live.Store(false)
	h.mu.Unlock()
	if started {
		h.quitting.Store(true)
		close(h.quit)
		h.wg.Wait()
	}
}
