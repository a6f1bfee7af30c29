package db

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadStateRefs races readers taking and dropping references against
// a writer publishing new read states: a reader must never hold a released
// state, and every retired state must be released exactly once, when its
// last reader lets go.
func TestReadStateRefs(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		bad      atomic.Int64
		taken    atomic.Int64
		retired  []*readState
		retireMu sync.Mutex
	)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				ref := d.loadReadState()
				if ref.rs.released.Load() {
					bad.Add(1)
				}
				// Hold it a little, across other readers' drops.
				for i := 0; i < 10; i++ {
					_ = ref.rs.mem.Len()
				}
				if ref.rs.released.Load() {
					bad.Add(1)
				}
				ref.unref()
				taken.Add(1)
			}
		}()
	}
	for i := 0; i < 20000; i++ {
		d.mu.Lock()
		old := d.rs.Load()
		d.publishLocked()
		d.mu.Unlock()
		retireMu.Lock()
		retired = append(retired, old)
		retireMu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("readers saw a released read state %d times", n)
	}
	for i, rs := range retired {
		if !rs.released.Load() {
			t.Fatalf("retired read state %d of %d was never released (refs %d)", i, len(retired), rs.refs.Load())
		}
	}
	if cur := d.rs.Load(); cur.released.Load() || cur.retired.Load() {
		t.Fatal("the current read state is retired or released")
	}
	t.Logf("%d references taken while %d states were retired", taken.Load(), len(retired))
}
