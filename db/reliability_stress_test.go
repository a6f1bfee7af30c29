package db

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

var stressDuration = flag.Duration("stress_duration", 0, "how long TestConcurrencyStress runs (default 1.5s; -long: 60s)")

const (
	stressWriters = 4
	stressPairs   = 40 // key pairs per writer
)

// stressKey names key a or b of pair j of writer w. Every write sets or
// deletes both keys of a pair in one batch, so a consistent view has them
// equal.
func stressKey(w, j int, ab byte) []byte { return []byte(fmt.Sprintf("w%d-%c%02d", w, ab, j)) }

// stressValue is the value of version ver by writer w, padded.
func stressValue(w int, ver int64, pad int) []byte {
	return []byte(fmt.Sprintf("%d/%08d/%s", w, ver, strings.Repeat("p", pad)))
}

func stressVersion(v []byte) int64 {
	parts := strings.SplitN(string(v), "/", 3)
	if len(parts) != 3 {
		return -1
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestConcurrencyStress runs writers (batches setting or deleting key
// pairs, some with Sync), readers (Gets at the latest state and at
// snapshots), iterators (forward and backward scans, seeks), snapshot
// re-readers, flushes, compactions and Metrics calls at once, and checks:
// a writer reads its own writes; a pair is never seen half-written (by Get
// at a snapshot or by an iterator); no reader sees a key go back to an
// older version; a snapshot reads the same twice; iterators are ordered;
// and at the end, and after reopening, each writer's last writes are
// there. Run it with -race.
func TestConcurrencyStress(t *testing.T) {
	dur := *stressDuration
	if dur == 0 {
		dur = 1500 * time.Millisecond
		if *relLong {
			dur = time.Minute
		}
		if testing.Short() {
			dur = 300 * time.Millisecond
		}
	}
	opts := &Options{
		FS:                  vfs.NewMem(),
		WriteBufferSize:     8 << 10,
		BlockSize:           512,
		L0CompactionTrigger: 2,
		LBaseMaxBytes:       32 << 10,
		TargetFileSize:      8 << 10,
		BlockCacheSize:      64 << 10,
	}
	d := mustOpen(t, "/db", opts)
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		failMu   sync.Mutex
		failure  string
		counts   [8]atomic.Int64 // writes, gets, scans, snapshots, flushes, compactions, metrics, seeks
		versions [stressWriters][stressPairs]atomic.Int64
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		if failure == "" {
			failure = fmt.Sprintf(format, args...)
		}
		failMu.Unlock()
		stop.Store(true)
	}
	finals := make([][]int64, stressWriters) // writer → pair → last version (-1: deleted)
	for w := 0; w < stressWriters; w++ {
		finals[w] = make([]int64, stressPairs)
		for j := range finals[w] {
			finals[w][j] = -1
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for ver := int64(1); !stop.Load(); ver++ {
				j := rng.Intn(stressPairs)
				var b Batch
				del := rng.Intn(8) == 0
				if del {
					b.Delete(stressKey(w, j, 'a'))
					b.Delete(stressKey(w, j, 'b'))
				} else {
					v := stressValue(w, ver, rng.Intn(60))
					b.Put(stressKey(w, j, 'a'), v)
					b.Put(stressKey(w, j, 'b'), v)
				}
				if err := d.Write(&b, &WriteOptions{Sync: rng.Intn(10) == 0}); err != nil {
					fail("writer %d: %v", w, err)
					return
				}
				counts[0].Add(1)
				if del {
					finals[w][j] = -1
				} else {
					finals[w][j] = ver
					versions[w][j].Store(ver)
				}
				// Read your own write.
				got, err := d.Get(stressKey(w, j, 'b'), nil)
				switch {
				case del && !isNotFound(err):
					fail("writer %d: deleted pair %d reads %q, %v", w, j, got, err)
				case !del && (err != nil || stressVersion(got) != ver):
					fail("writer %d: pair %d reads %q, %v; want version %d", w, j, got, err, ver)
				}
			}
		}(w)
	}
	// Readers: Gets at snapshots (pairs whole) and at the latest state
	// (no going back).
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(100 + int64(r)))
			var seen [stressWriters][stressPairs]int64
			for !stop.Load() {
				w, j := rng.Intn(stressWriters), rng.Intn(stressPairs)
				floor := versions[w][j].Load() // a version written before this Get began
				v, err := d.Get(stressKey(w, j, 'a'), nil)
				counts[1].Add(1)
				if err != nil && !isNotFound(err) {
					fail("reader %d: %v", r, err)
					return
				}
				if err == nil {
					ver := stressVersion(v)
					if ver < seen[w][j] {
						fail("reader %d: %s went back from version %d to %d", r, stressKey(w, j, 'a'), seen[w][j], ver)
					}
					seen[w][j] = ver
					_ = floor
				}
				s := d.NewSnapshot()
				ro := &ReadOptions{Snapshot: s}
				a, aerr := d.Get(stressKey(w, j, 'a'), ro)
				b, berr := d.Get(stressKey(w, j, 'b'), ro)
				s.Release()
				if (aerr == nil) != (berr == nil) || !bytes.Equal(a, b) || (aerr != nil && !isNotFound(aerr)) || (berr != nil && !isNotFound(berr)) {
					fail("reader %d: pair %d/%d at a snapshot: a=%q,%v b=%q,%v", r, w, j, a, aerr, b, berr)
				}
			}
		}(r)
	}
	// Iterators: ordered, pairs whole; and snapshots that read the same twice.
	checkScan := func(who string, it *Iterator, backward bool) map[string]string {
		m := map[string]string{}
		var prev []byte
		ok := it.First()
		if backward {
			ok = it.Last()
		}
		for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[backward]() {
			k := append([]byte(nil), it.Key()...)
			if prev != nil && (bytes.Compare(k, prev) <= 0) != backward {
				fail("%s: iterator order %q then %q (backward %v)", who, prev, k, backward)
				break
			}
			prev = k
			m[string(k)] = string(it.Value())
		}
		if err := it.Error(); err != nil {
			fail("%s: iterator: %v", who, err)
		}
		for k, v := range m {
			if strings.Contains(k, "-a") {
				if bv, ok := m[strings.Replace(k, "-a", "-b", 1)]; !ok || bv != v {
					fail("%s: iterator sees %s=%.12q but its pair b=%.12q (present %v)", who, k, v, bv, ok)
				}
			}
		}
		return m
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(200 + int64(i)))
			for !stop.Load() {
				if i == 0 {
					it := d.NewIterator(nil)
					checkScan("scanner", it, rng.Intn(2) == 0)
					// A few seeks with steps both ways.
					for s := 0; s < 10; s++ {
						target := stressKey(rng.Intn(stressWriters), rng.Intn(stressPairs), 'a')
						if it.Seek(target) && bytes.Compare(it.Key(), target) < 0 {
							fail("Seek(%s) landed on %s", target, it.Key())
						}
						counts[7].Add(1)
						if it.Valid() && rng.Intn(2) == 0 {
							k := append([]byte(nil), it.Key()...)
							if it.Prev() && bytes.Compare(it.Key(), k) >= 0 {
								fail("Prev from %s went to %s", k, it.Key())
							}
						}
					}
					if err := it.Close(); err != nil {
						fail("iterator Close: %v", err)
					}
					counts[2].Add(1)
					continue
				}
				s := d.NewSnapshot()
				it := d.NewIterator(&ReadOptions{Snapshot: s})
				first := checkScan("snapshot", it, false)
				it.Close()
				time.Sleep(time.Millisecond)
				it = d.NewIterator(&ReadOptions{Snapshot: s})
				second := checkScan("snapshot again", it, true)
				it.Close()
				if diff := diffStates(second, first); diff != "  (identical)" {
					fail("a snapshot read differently the second time:\n%s", diff)
				}
				s.Release()
				counts[3].Add(1)
			}
		}(i)
	}
	// Flushes, compactions, metrics.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(300))
		for !stop.Load() {
			time.Sleep(time.Duration(1+rng.Intn(5)) * time.Millisecond)
			switch rng.Intn(4) {
			case 0, 1:
				if err := d.Flush(); err != nil {
					fail("Flush: %v", err)
				}
				counts[4].Add(1)
			case 2:
				var start, limit []byte
				if rng.Intn(2) == 0 {
					start, limit = stressKey(1, 0, 'a'), stressKey(2, 20, 'b')
				}
				if ok, err := compactRange(d, start, limit); err != nil {
					fail("CompactRange: %v", err)
				} else if ok {
					counts[5].Add(1)
				}
			case 3:
				m := d.Metrics()
				if m.BackgroundError != nil {
					fail("background error: %v", m.BackgroundError)
				}
				_ = m.String()
				counts[6].Add(1)
			}
		}
	}()
	deadline := time.After(dur)
	for done := false; !done && !stop.Load(); {
		select {
		case <-deadline:
			done = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop.Store(true)
	wg.Wait()
	if failure != "" {
		d.Close()
		t.Fatal(failure)
	}
	m := d.Metrics()
	t.Logf("%v: %d batches, %d gets, %d scans, %d seeks, %d snapshot re-reads, %d flushes asked (%d done), %d compactions asked (%d done), %d metrics",
		dur, counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[7].Load(), counts[3].Load(),
		counts[4].Load(), m.Flushes, counts[5].Load(), m.Compactions, counts[6].Load())
	checkFinal := func(when string) {
		t.Helper()
		all, err := scanState(d, nil)
		if err != nil {
			t.Fatalf("%s: scan: %v", when, err)
		}
		want := 0
		for w := range finals {
			for j, ver := range finals[w] {
				for _, ab := range []byte{'a', 'b'} {
					k := stressKey(w, j, ab)
					v, err := d.Get(k, nil)
					switch {
					case ver < 0 && !isNotFound(err):
						t.Fatalf("%s: %s = %q, %v; want deleted", when, k, v, err)
					case ver >= 0 && (err != nil || stressVersion(v) != ver || all[string(k)] != string(v)):
						t.Fatalf("%s: %s = %q, %v (scan %q); want version %d", when, k, v, err, all[string(k)], ver)
					}
					if ver >= 0 {
						want++
					}
				}
			}
		}
		if len(all) != want {
			t.Fatalf("%s: scan saw %d keys, want %d", when, len(all), want)
		}
	}
	checkFinal("at the end")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", opts)
	defer d.Close()
	checkFinal("after reopening")
}
