package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of issue 16 (DeleteRange, MultiGet, Checkpoint,
// bounded iterators): edges the other suites do not aim at.

func a16key(i int) []byte { return []byte(fmt.Sprintf("k%07d", i)) }

type a16model map[string]string

func (m a16model) clone() a16model {
	c := make(a16model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m a16model) delRange(lo, hi string) {
	for k := range m {
		if lo <= k && k < hi {
			delete(m, k)
		}
	}
}

func (m a16model) keysIn(lo, hi *string) []string {
	var ks []string
	for k := range m {
		if (lo == nil || k >= *lo) && (hi == nil || k < *hi) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// a16scan checks a full forward and backward scan of an iterator with the
// given bounds, and a Seek + Prev/Next at every probe, against m.
func a16scan(t testing.TB, d *DB, snap *Snapshot, lo, hi *string, m a16model, probes []string) {
	t.Helper()
	ro := &ReadOptions{Snapshot: snap}
	if lo != nil {
		ro.LowerBound = []byte(*lo)
	}
	if hi != nil {
		ro.UpperBound = []byte(*hi)
	}
	name := fmt.Sprintf("bounds [%s, %s)", a16q(lo), a16q(hi))
	want := m.keysIn(lo, hi)
	it := d.NewIterator(ro)
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if string(it.Value()) != m[string(it.Key())] {
			t.Fatalf("%s: forward value of %q = %q, want %q", name, it.Key(), it.Value(), m[string(it.Key())])
		}
	}
	if it.Error() != nil || !slices.Equal(got, want) {
		t.Fatalf("%s: forward scan %q (err %v), want %q", name, got, it.Error(), want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
		if string(it.Value()) != m[string(it.Key())] {
			t.Fatalf("%s: backward value of %q = %q, want %q", name, it.Key(), it.Value(), m[string(it.Key())])
		}
	}
	slices.Reverse(got)
	if it.Error() != nil || !slices.Equal(got, want) {
		t.Fatalf("%s: backward scan %q (err %v), want %q", name, got, it.Error(), want)
	}
	for _, p := range probes {
		pos := sort.SearchStrings(want, p)
		ok := it.Seek([]byte(p))
		if ok != (pos < len(want)) || ok && string(it.Key()) != want[pos] {
			t.Fatalf("%s: Seek(%q) = %v at %q, want position %d of %q", name, p, ok, it.Key(), pos, want)
		}
		if !ok {
			continue
		}
		// Prev from the key found, then Next back.
		ok = it.Prev()
		if ok != (pos > 0) || ok && string(it.Key()) != want[pos-1] {
			t.Fatalf("%s: Seek(%q)+Prev = %v at %q, want position %d of %q", name, p, ok, it.Key(), pos-1, want)
		}
		if ok {
			if !it.Next() || string(it.Key()) != want[pos] {
				t.Fatalf("%s: Seek(%q)+Prev+Next at %q (valid %v), want %q", name, p, it.Key(), it.Valid(), want[pos])
			}
		} else {
			it.Seek([]byte(p)) // an iterator run off the start stays off
		}
		if it.Next() != (pos+1 < len(want)) || it.Valid() && string(it.Key()) != want[pos+1] {
			t.Fatalf("%s: Seek(%q)+Next at %q (valid %v), want position %d of %q", name, p, it.Key(), it.Valid(), pos+1, want)
		}
	}
}

func a16q(s *string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *s)
}

// a16points checks Get and MultiGet (with every probe twice) against m.
func a16points(t testing.TB, d *DB, snap *Snapshot, m a16model, probes []string) {
	t.Helper()
	ro := &ReadOptions{Snapshot: snap}
	var keys [][]byte
	for _, p := range probes {
		keys = append(keys, []byte(p), []byte(p))
	}
	vals, errs := d.MultiGet(keys, ro)
	for i, k := range keys {
		w, ok := m[string(k)]
		v, err := d.Get(k, ro)
		if ok && (err != nil || string(v) != w) || !ok && !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want %q (present %v)", k, v, err, w, ok)
		}
		if ok && (errs[i] != nil || string(vals[i]) != w) || !ok && !errors.Is(errs[i], ErrNotFound) {
			t.Fatalf("MultiGet[%d](%q) = %q, %v; want %q (present %v)", i, k, vals[i], errs[i], w, ok)
		}
	}
}

// a16full checks points, unbounded scans and scans bounded by every pair
// of bounds.
func a16full(t testing.TB, d *DB, snap *Snapshot, m a16model, probes, bounds []string) {
	t.Helper()
	a16points(t, d, snap, m, probes)
	a16scan(t, d, snap, nil, nil, m, probes)
	for i := range bounds {
		lo := bounds[i]
		a16scan(t, d, snap, &lo, nil, m, probes)
		a16scan(t, d, snap, nil, &lo, m, probes)
		for j := range bounds {
			hi := bounds[j]
			a16scan(t, d, snap, &lo, &hi, m, probes)
		}
	}
}

// TestAdversarial16EdgesThroughLifecycle puts tombstones on the edges that
// matter (the empty key as start, an end equal to a live key, an end one
// byte past a key, nested and stacked tombstones, a tombstone-only
// memtable) and checks every read, bounded and not, in both directions, at
// each stage: memtable, flushed to L0, compacted, reopened, read-only
// reopened, and through a snapshot taken in between.
func TestAdversarial16EdgesThroughLifecycle(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true, BlockSize: 64, TargetFileSize: 256}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	m := a16model{}
	put := func(k, v string) {
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	dr := func(lo, hi string) {
		if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
			t.Fatal(err)
		}
		m.delRange(lo, hi)
	}
	base := []string{"", "\x00", "a", "a\x00", "aa", "ab", "b", "b\x00", "ba", "c", "d", "e", "f", "g", "\xff", "\xff\xff"}
	for _, k := range base {
		put(k, "v0-"+k)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap0 := d.NewSnapshot()
	m0 := m.clone()
	defer snap0.Release()
	// A memtable of tombstones only, then flushed alone.
	dr("", "a")       // the empty key as start
	dr("a\x00", "ab") // ends at a live key
	dr("b", "b\x00")  // exactly one key
	dr("c", "f")      // nested ...
	dr("d", "e")      // ... inside it, newer
	dr("c", "f")      // the same range again
	dr("\xff", "\xff\xff\xff")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); m.RangeTombstones == 0 {
		t.Fatalf("tombstone-only memtable flushed to no tombstone")
	}
	snap1 := d.NewSnapshot()
	m1 := m.clone()
	defer snap1.Release()
	// Rewrite some of the deleted keys above the tombstones, and a second
	// layer of tombstones over them.
	put("", "v1-empty")
	put("d", "v1-d")
	put("e", "v1-e")
	put("a\x00", "v1-a0")
	dr("d", "d\x00")
	probes := append(slices.Clone(base), "0", "a\x00\x00", "bb", "cc", "d\x00", "dd", "ee", "z", "\xff\x00", "\xff\xff\x00")
	bounds := []string{"", "a", "ab", "b", "b\x00", "c", "d", "e", "f", "\xff", "\xff\xff\xff"}
	check := func(stage string) {
		t.Run(stage, func(t *testing.T) {
			a16full(t, d, nil, m, probes, bounds)
			if snap0 != nil {
				a16full(t, d, snap0, m0, probes, bounds)
				a16full(t, d, snap1, m1, probes, bounds)
			}
		})
	}
	check("memtable")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := d.CompactRange([]byte("d"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	check("partly compacted")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	snap0.Release()
	snap1.Release()
	snap0, snap1 = nil, nil
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted after release")
	if n := tableRangeDels(d); n != 0 {
		t.Errorf("after the snapshots' release and a full compaction, %d tombstones remain", n)
	}
	dr("", "\x00\x00") // one more in the WAL only
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	check("reopened")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true})
	check("read-only")
}

// a16rkey draws from a small key space with the empty key, prefixes and
// zero-byte successors, so tombstone bounds coincide with keys and with
// each other.
func a16rkey(rng *rand.Rand) string {
	switch rng.Intn(12) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("k%02d\x00", rng.Intn(40))
	case 2:
		return fmt.Sprintf("k%02d", rng.Intn(40)/10) // "k0".."k3": prefixes
	}
	return fmt.Sprintf("k%02d", rng.Intn(40))
}

// TestAdversarial16RandomBoundedSnapshots runs random puts, deletes and
// range deletions (many overlapping) on a tree that flushes and compacts
// constantly, with snapshots taken between tombstones and data, and
// checks Get, MultiGet with duplicates, and bounded iterators in both
// directions (Seek + Prev at every probe) for the current state and every
// live snapshot, with reopens (read-write and read-only) in between.
func TestAdversarial16RandomBoundedSnapshots(t *testing.T) {
	seeds := int64(6)
	if raceEnabled || testing.Short() {
		seeds = 1 // single-threaded: the race detector adds nothing here
	}
	for seed := int64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { a16randomRun(t, seed, 400) })
	}
}

func a16randomRun(t *testing.T, seed int64, ops int) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	o := &Options{FS: fs, WriteBufferSize: 2 << 10, TargetFileSize: 1 << 10, BlockSize: 128,
		LBaseMaxBytes: 4 << 10, L0CompactionTrigger: 2}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	m := a16model{}
	type snapM struct {
		s *Snapshot
		m a16model
	}
	var snaps []snapM
	var probes []string
	for i := 0; i < 40; i++ {
		probes = append(probes, fmt.Sprintf("k%02d", i))
	}
	probes = append(probes, "", "k", "k0", "k1", "k3", "k05\x00", "k39\x00", "l", "\xff")
	bounds := []string{"", "k0", "k05", "k10", "k10\x00", "k2", "k25", "k39\x00"}
	verify := func(op int) {
		t.Helper()
		pick := bounds[rng.Intn(len(bounds))]
		a16points(t, d, nil, m, probes)
		a16scan(t, d, nil, nil, nil, m, probes)
		a16scan(t, d, nil, &pick, nil, m, probes)
		hi := bounds[rng.Intn(len(bounds))]
		a16scan(t, d, nil, &pick, &hi, m, probes)
		a16scan(t, d, nil, nil, &hi, m, probes)
		for _, s := range snaps {
			a16points(t, d, s.s, s.m, probes)
			a16scan(t, d, s.s, &pick, &hi, s.m, probes)
			a16scan(t, d, s.s, nil, nil, s.m, probes)
		}
	}
	for op := 0; op < ops; op++ {
		switch r := rng.Intn(100); {
		case r < 45:
			k := a16rkey(rng)
			v := fmt.Sprintf("v%d-%s", op, bytes.Repeat([]byte{'x'}, rng.Intn(200)))
			if err := d.Put([]byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		case r < 50:
			k := a16rkey(rng)
			if err := d.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case r < 70:
			lo, hi := a16rkey(rng), a16rkey(rng)
			if lo > hi {
				lo, hi = hi, lo
			}
			if rng.Intn(4) == 0 {
				var b Batch
				b.Put([]byte(hi), []byte("batch-hi"))
				b.DeleteRange([]byte(lo), []byte(hi))
				b.Put([]byte(lo), []byte("batch-lo"))
				if err := d.Write(&b, nil); err != nil {
					t.Fatal(err)
				}
				m[hi] = "batch-hi"
				m.delRange(lo, hi)
				m[lo] = "batch-lo"
			} else {
				if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
					t.Fatal(err)
				}
				m.delRange(lo, hi)
			}
		case r < 76:
			if len(snaps) < 3 {
				snaps = append(snaps, snapM{d.NewSnapshot(), m.clone()})
			} else {
				i := rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
		case r < 80:
			lo, hi := a16rkey(rng), a16rkey(rng)
			if err := d.CompactRange([]byte(min(lo, hi)), []byte(max(lo, hi))); err != nil {
				t.Fatal(err)
			}
		case r < 82:
			for _, s := range snaps {
				s.s.Release()
			}
			snaps = nil
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if rng.Intn(2) == 0 {
				ro := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true})
				a16points(t, ro, nil, m, probes)
				a16scan(t, ro, nil, nil, nil, m, probes)
				if err := ro.Close(); err != nil {
					t.Fatal(err)
				}
			}
			d = mustOpen(t, "/db", o)
		case r < 84:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		default:
			verify(op)
		}
	}
	verify(ops)
	for _, s := range snaps {
		s.s.Release()
	}
	snaps = nil
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitCompactions(t, d)
	checkLevelInvariants(t, d)
	verify(ops + 1)
}

// TestAdversarial16ConcurrentAtomicRanges has writers that each keep their
// own key space in one state at every moment: all keys at one version, or
// all absent. Every write is one batch mixing range deletions (whole
// space, or a part followed by the part's rewrite, or a doomed put then a
// tombstone over it) with puts. Readers check the invariant through
// MultiGet (every key twice), full and bounded iterators in both
// directions, iterators and snapshots made before later writes and read
// slowly while flushes and compactions (automatic and CompactRange) run.
func TestAdversarial16ConcurrentAtomicRanges(t *testing.T) {
	const writers, keysPer = 4, 16
	fs := vfs.NewMem()
	o := &Options{FS: fs, WriteBufferSize: 8 << 10, TargetFileSize: 2 << 10, BlockSize: 256,
		LBaseMaxBytes: 8 << 10, L0CompactionTrigger: 2}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	wkey := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/k%02d", w, i)) }
	pad := string(bytes.Repeat([]byte{'p'}, 60))
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
		stop.Store(true)
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for n := 1; !stop.Load(); n++ {
				v := []byte(fmt.Sprintf("v%06d-%s", n, pad))
				var b Batch
				switch rng.Intn(4) {
				case 0: // all absent
					b.DeleteRange([]byte(fmt.Sprintf("w%d/", w)), []byte(fmt.Sprintf("w%d0", w)))
				case 1: // whole space deleted, then rewritten
					b.DeleteRange([]byte(fmt.Sprintf("w%d/", w)), []byte(fmt.Sprintf("w%d0", w)))
					for i := 0; i < keysPer; i++ {
						b.Put(wkey(w, i), v)
					}
				case 2: // a part deleted and rewritten, with a doomed put under the tombstone
					lo := rng.Intn(keysPer)
					hi := lo + rng.Intn(keysPer-lo+1)
					for i := 0; i < keysPer; i++ {
						b.Put(wkey(w, i), v)
					}
					b.Put(wkey(w, lo), []byte("doomed"))
					b.DeleteRange(wkey(w, lo), wkey(w, hi))
					for i := lo; i < hi; i++ {
						b.Put(wkey(w, i), v)
					}
					if lo == hi {
						b.Put(wkey(w, lo), v)
					}
				default: // plain overwrite
					for i := 0; i < keysPer; i++ {
						b.Put(wkey(w, i), v)
					}
				}
				if err := d.Write(&b, nil); err != nil {
					report(err)
					return
				}
			}
		}(w)
	}
	// check verifies one writer's keys as read: all one version or all absent.
	check := func(what string, w int, vals []string) error {
		for i := 1; i < len(vals); i++ {
			if vals[i] != vals[0] {
				return fmt.Errorf("%s: writer %d keys disagree: %q", what, w, vals)
			}
		}
		return nil
	}
	scan := func(it *Iterator, reverse bool) (map[int][]string, error) {
		got := map[int][]string{}
		var ok bool
		if reverse {
			ok = it.Last()
		} else {
			ok = it.First()
		}
		for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[reverse]() {
			var w, i int
			if _, err := fmt.Sscanf(string(it.Key()), "w%d/k%d", &w, &i); err != nil {
				return nil, fmt.Errorf("stray key %q", it.Key())
			}
			got[w] = append(got[w], string(it.Value()))
			time.Sleep(time.Microsecond)
		}
		return got, it.Error()
	}
	checkScan := func(what string, got map[int][]string) error {
		for w, vals := range got {
			if len(vals) != keysPer {
				return fmt.Errorf("%s: writer %d has %d of %d keys: %q", what, w, len(vals), keysPer, vals)
			}
			if err := check(what, w, vals); err != nil {
				return err
			}
		}
		return nil
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			for !stop.Load() {
				switch rng.Intn(4) {
				case 0:
					var keys [][]byte
					for w := 0; w < writers; w++ {
						for i := 0; i < keysPer; i++ {
							keys = append(keys, wkey(w, i), wkey(w, i))
						}
					}
					vals, errs := d.MultiGet(keys, nil)
					for w := 0; w < writers; w++ {
						var vs []string
						for i := 0; i < 2*keysPer; i++ {
							j := w*2*keysPer + i
							switch {
							case errs[j] == nil:
								vs = append(vs, string(vals[j]))
							case errors.Is(errs[j], ErrNotFound):
								vs = append(vs, "<absent>")
							default:
								report(errs[j])
								return
							}
						}
						if err := check("MultiGet", w, vs); err != nil {
							report(err)
							return
						}
					}
				case 1:
					it := d.NewIterator(nil)
					got, err := scan(it, rng.Intn(2) == 0)
					it.Close()
					if err == nil {
						err = checkScan("scan", got)
					}
					if err != nil {
						report(err)
						return
					}
				case 2:
					w := rng.Intn(writers)
					lo, hi := PrefixBounds([]byte(fmt.Sprintf("w%d/", w)))
					it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
					got, err := scan(it, rng.Intn(2) == 0)
					it.Close()
					if err == nil {
						err = checkScan("bounded scan", got)
					}
					if err == nil && len(got) > 1 {
						err = fmt.Errorf("bounded scan of writer %d saw writers %v", w, got)
					}
					if err != nil {
						report(err)
						return
					}
				case 3:
					// A snapshot read twice, far apart: the same answers.
					s := d.NewSnapshot()
					it := d.NewIterator(&ReadOptions{Snapshot: s})
					first, err := scan(it, false)
					it.Close()
					if err == nil {
						time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
						var keys [][]byte
						for w := 0; w < writers; w++ {
							for i := 0; i < keysPer; i++ {
								keys = append(keys, wkey(w, i))
							}
						}
						vals, errs := d.MultiGet(keys, &ReadOptions{Snapshot: s})
						for w := 0; w < writers && err == nil; w++ {
							var vs []string
							for i := 0; i < keysPer; i++ {
								if errs[w*keysPer+i] == nil {
									vs = append(vs, string(vals[w*keysPer+i]))
								}
							}
							if !slices.Equal(vs, first[w]) {
								err = fmt.Errorf("snapshot: writer %d scanned %q, later MultiGet %q", w, first[w], vs)
							}
						}
					}
					s.Release()
					if err != nil {
						report(err)
						return
					}
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(7))
		for !stop.Load() {
			var err error
			switch rng.Intn(3) {
			case 0:
				err = d.Flush()
			case 1:
				w := rng.Intn(writers)
				err = d.CompactRange(wkey(w, rng.Intn(keysPer)), wkey(w, rng.Intn(keysPer)))
			case 2:
				time.Sleep(time.Millisecond)
			}
			if err != nil {
				report(err)
				return
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	// Tombstones still held at the end, or entries compactions dropped
	// because a tombstone covered them, show compactions met tombstones.
	// (A run may end with every tombstone already compacted away.)
	if m := d.Metrics(); m.Compactions == 0 || m.RangeTombstones+m.MemTableRangeTombstones+m.CoveredEntriesDropped == 0 {
		t.Errorf("the run did not exercise compactions over tombstones:\n%s", m)
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	it := d.NewIterator(nil)
	got, err := scan(it, false)
	it.Close()
	if err == nil {
		err = checkScan("after reopen", got)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// a16state reads a whole store into a model.
func a16state(t testing.TB, d *DB) a16model {
	t.Helper()
	m := a16model{}
	it := d.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

func a16equal(a, b a16model) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAdversarial16CrashPrefixes crashes (random survival of unsynced
// bytes and directory operations) at random moments of a run of puts and
// range deletions, some synced, while flushes and compactions run in the
// background, and requires every crashed store to open, read-only first
// and then read-write, twice, holding the model after some prefix of the
// writes that includes every synced one. Tombstone-only memtables, and a
// tombstone as the last write before a crash, come up often.
func TestAdversarial16CrashPrefixes(t *testing.T) {
	for seed := int64(1); seed <= a16crashSeeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			fs := vfs.NewMem()
			o := &Options{FS: fs, WriteBufferSize: 2 << 10, TargetFileSize: 1 << 10, BlockSize: 128,
				LBaseMaxBytes: 4 << 10, L0CompactionTrigger: 2}
			d := mustOpen(t, "/db", o)
			defer d.Close()
			m := a16model{}
			hist := []a16model{m.clone()}
			synced := 0 // hist index every crash must reach
			for op := 0; op < 300; op++ {
				sync := rng.Intn(4) == 0
				wo := &WriteOptions{Sync: sync}
				switch r := rng.Intn(10); {
				case r < 4:
					k := a16rkey(rng)
					v := fmt.Sprintf("v%d-%s", op, bytes.Repeat([]byte{'x'}, rng.Intn(150)))
					if err := d.Put([]byte(k), []byte(v), wo); err != nil {
						t.Fatal(err)
					}
					m[k] = v
				case r < 8:
					// Runs of tombstones: often a memtable holds nothing else.
					for n := rng.Intn(3); n >= 0; n-- {
						lo, hi := a16rkey(rng), a16rkey(rng)
						if lo > hi {
							lo, hi = hi, lo
						}
						if err := d.DeleteRange([]byte(lo), []byte(hi), wo); err != nil {
							t.Fatal(err)
						}
						m.delRange(lo, hi)
						if n > 0 {
							hist = append(hist, m.clone())
						}
					}
				case r < 9:
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
					sync = true // a flush makes everything before it durable
				default:
					var b Batch
					lo, hi := a16rkey(rng), a16rkey(rng)
					if lo > hi {
						lo, hi = hi, lo
					}
					b.Put([]byte(lo), []byte("b-lo"))
					b.DeleteRange([]byte(lo), []byte(hi))
					b.Put([]byte(hi), []byte("b-hi"))
					if err := d.Write(&b, wo); err != nil {
						t.Fatal(err)
					}
					m.delRange(lo, hi)
					m[hi] = "b-hi"
				}
				hist = append(hist, m.clone())
				if sync {
					synced = len(hist) - 1
				}
				if rng.Intn(12) != 0 {
					continue
				}
				c := fs.CrashClone(rng)
				match := func(what string, got a16model) {
					t.Helper()
					for j := len(hist) - 1; j >= synced; j-- {
						if a16equal(got, hist[j]) {
							return
						}
					}
					t.Fatalf("op %d: %s: the crashed store holds %d keys, matching no prefix from %d to %d", op, what, len(got), synced, len(hist)-1)
				}
				ro, err := Open("/db", &Options{FS: c, ReadOnly: true})
				if err != nil {
					t.Fatalf("op %d: read-only open of the crashed store: %v", op, err)
				}
				first := a16state(t, ro)
				match("read-only", first)
				ro.Close()
				for i := 0; i < 2; i++ {
					cd, err := Open("/db", &Options{FS: c, WriteBufferSize: 2 << 10, TargetFileSize: 1 << 10})
					if err != nil {
						t.Fatalf("op %d: open %d of the crashed store: %v", op, i, err)
					}
					got := a16state(t, cd)
					if !a16equal(got, first) {
						t.Fatalf("op %d: open %d of the crashed store differs from its read-only open", op, i)
					}
					if err := cd.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
					if !a16equal(a16state(t, cd), first) {
						t.Fatalf("op %d: compacting the crashed store changed it", op)
					}
					cd.Close()
				}
			}
		})
	}
}

// a16crashSeeds is how many runs TestAdversarial16CrashPrefixes makes (150
// held during the review; 3 keep the suite fast).
var a16crashSeeds = int64(3)

// TestAdversarial16MaxKeySizeBounds deletes a range whose end (and, in a
// second tombstone, start) is MaxKeySize bytes, flushes, compacts and
// reopens; one byte more is refused at the batch.
func TestAdversarial16MaxKeySizeBounds(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("copies 8 MiB keys many times over; single-threaded")
	}
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	big := bytes.Repeat([]byte{'m'}, MaxKeySize)
	bigStart := bytes.Repeat([]byte{'q'}, MaxKeySize)
	m := a16model{}
	for _, k := range []string{"a", "b", "m", "mm", "n", "q", "r", "s"} {
		if err := d.Put([]byte(k), []byte("v"+k), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = "v" + k
	}
	if err := d.Put(big, []byte("big"), nil); err != nil {
		t.Fatal(err)
	}
	m[string(big)] = "big"
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("b"), big, nil); err != nil { // big itself stays
		t.Fatal(err)
	}
	m.delRange("b", string(big))
	if err := d.DeleteRange(bigStart, []byte("s"), nil); err != nil {
		t.Fatal(err)
	}
	m.delRange(string(bigStart), "s")
	tooBig := append(bytes.Clone(big), 'm')
	if err := d.DeleteRange([]byte("a"), tooBig, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange with an end of MaxKeySize+1 bytes: %v, want ErrInvalidArgument", err)
	}
	if err := d.DeleteRange(tooBig, append(bytes.Clone(tooBig), 'x'), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange with a start of MaxKeySize+1 bytes: %v, want ErrInvalidArgument", err)
	}
	probes := []string{"a", "b", "m", "mm", "n", "q", "r", "s", string(big), string(bigStart)}
	last := time.Now()
	check := func(stage string) {
		t.Helper()
		t.Logf("%s: %v since the last check", stage, time.Since(last))
		last = time.Now()
		a16points(t, d, nil, m, probes[:8])
		if v, err := d.Get(big, nil); err != nil || string(v) != "big" {
			t.Fatalf("%s: Get(big) = %q, %v", stage, v, err)
		}
		if got := a16state(t, d); !a16equal(got, m) {
			t.Fatalf("%s: store holds %d keys, want %d", stage, len(got), len(m))
		}
	}
	check("memtable")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	check("reopened")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
}

// TestAdversarial16TombstoneEndsAtTableStart puts, for every table of a
// compacted level, a tombstone whose exclusive end is exactly that
// table's first key (and one starting exactly at its last key), kept in
// the outputs by a snapshot, compacts ranges one at a time, and reopens:
// the level's tables must stay disjoint (Open's "overlapping tables"
// check) and reads right.
func TestAdversarial16TombstoneEndsAtTableStart(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true, TargetFileSize: 1 << 10, BlockSize: 128}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	m := a16model{}
	val := string(bytes.Repeat([]byte{'v'}, 100))
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%03d", i)
		if err := d.Put([]byte(k), []byte(val), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = val
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	var firsts, lasts []string
	ref := d.loadReadState()
	for _, files := range ref.rs.v.Files {
		for _, f := range files {
			firsts = append(firsts, string(f.Smallest[:len(f.Smallest)-8]))
			lasts = append(lasts, string(f.Largest[:len(f.Largest)-8]))
		}
	}
	ref.unref()
	if len(firsts) < 5 {
		t.Fatalf("only %d tables", len(firsts))
	}
	snap := d.NewSnapshot()
	msnap := m.clone()
	for i := 1; i < len(firsts); i++ {
		lo := lasts[i-1][:len(lasts[i-1])-1] + "\x00" // inside the previous table
		if err := d.DeleteRange([]byte(lo), []byte(firsts[i]), nil); err != nil {
			t.Fatal(err)
		}
		m.delRange(lo, firsts[i])
		if err := d.DeleteRange([]byte(lasts[i]), []byte(lasts[i]+"\x00"), nil); err != nil {
			t.Fatal(err)
		}
		m.delRange(lasts[i], lasts[i]+"\x00")
	}
	var probes []string
	for i := range firsts {
		probes = append(probes, firsts[i], lasts[i], lasts[i]+"\x00")
	}
	check := func(stage string) {
		t.Helper()
		a16points(t, d, nil, m, probes)
		a16scan(t, d, nil, nil, nil, m, probes)
		if snap != nil {
			a16scan(t, d, snap, nil, nil, msnap, probes)
		}
		checkLevelInvariants(t, d)
	}
	check("memtable")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	for i := range firsts {
		if err := d.CompactRange([]byte(firsts[i]), []byte(firsts[i])); err != nil {
			t.Fatal(err)
		}
	}
	check("compacted table by table")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	snap = nil
	d = mustOpen(t, "/db", o)
	check("reopened")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted again")
	if n := tableRangeDels(d); n != 0 {
		t.Errorf("%d tombstones left after a full compaction with no snapshot", n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	check("reopened again")
}

// ---- Findings: these fail (performance cliffs of range tombstones). ----

// TestAdversarial16StaircaseTombstonesBlowUp: n range deletions that all
// end at the same key and start one key apart ([k_i, "z") for i < n, a
// "delete everything after my cursor" pattern) are fragmented at every
// start, and every fragment keeps the sequence numbers of every tombstone
// spanning it, so flushing the memtable writes n(n+1)/2 tombstones into
// the table: 1,000 calls give 500,500 tombstones and a 1.4 s flush (2,000
// give 2,001,000 and 5 s). Fragmenting is a read-side structure; the table
// should hold the n tombstones written (or the fragments with only what
// each needs).
func TestAdversarial16StaircaseTombstonesBlowUp(t *testing.T) {
	const n = 1000
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer d.Close()
	for i := 0; i < n; i++ {
		if err := d.DeleteRange(a16key(i), []byte("z"), nil); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if got := tableRangeDels(d); got > 4*n || took > time.Second {
		t.Fatalf("%d DeleteRange calls flushed to %d range tombstones in %v; want O(n) (at most %d)", n, got, took, 4*n)
	}
}

// TestAdversarial16InterleavedDeleteRangeGetQuadratic: each read after a
// DeleteRange rebuilds the memtable's whole tombstone set
// (memtable.RangeDels builds a new rangedel.Set per published prefix), so
// alternating DeleteRange and Get costs O(n log n) per Get: 2,000 pairs
// take 0.8 s, 4,000 take 3.9 s, 8,000 take 26 s.
func TestAdversarial16InterleavedDeleteRangeGetQuadratic(t *testing.T) {
	const n = 4000
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer d.Close()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := d.DeleteRange(a16key(2*i), a16key(2*i+1), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Get(a16key(i), nil); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("%d DeleteRange+Get pairs took %v; want well under a second", n, took)
	}
}

// TestAdversarial16IteratorRebuildsTableTombstones: every NewIterator of a
// store whose tables hold range tombstones calls rangedel.Merge(frozen,
// mem), which first expands every non-empty set to a tombstone slice
// (Set.Tombstones) even when only one set is non-empty and is returned as
// is, and, when the memtable holds a tombstone too, rebuilds a Set from all
// of them. With 100,000 tombstones in one table an iterator costs ~25-35
// ms with none in the memtable and ~70-110 ms with one (100 iterators: 7.3
// s), while a Get, which uses the read state's cached set, takes
// microseconds.
func TestAdversarial16IteratorRebuildsTableTombstones(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer d.Close()
	var b Batch
	for i := 0; i < 100000; i++ {
		b.DeleteRange(a16key(3*i), a16key(3*i+1))
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	seekAll := func() time.Duration {
		start := time.Now()
		for i := 0; i < 20; i++ {
			it := d.NewIterator(nil)
			it.Seek(a16key(i))
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	seekAll() // loads the table's tombstones once
	without := seekAll()
	if err := d.DeleteRange([]byte("zz"), []byte("zzz"), nil); err != nil {
		t.Fatal(err)
	}
	with := seekAll()
	if with > 200*time.Millisecond || without > 200*time.Millisecond {
		t.Fatalf("20 NewIterator+Seek+Close: %v with one tombstone in the memtable, %v without", with, without)
	}
}

// TestAdversarial16WideTombstoneUnderSnapshotGiantTable: one DeleteRange
// over the whole key space, kept in the tree by a snapshot older than it,
// used to glue the level it reached into one table that grew with every
// later write (32x TargetFileSize) and that every compaction into that
// level rewrote whole: 20,000 puts of ~110 bytes cost 45.8 MB of
// compaction writes, against 0.9 MB without the tombstone. Outputs are now
// cut inside tombstones, which are split at the cut.
func TestAdversarial16WideTombstoneUnderSnapshotGiantTable(t *testing.T) {
	o := smallTree(vfs.NewMem())
	d := mustOpen(t, "/db", o)
	defer d.Close()
	val := bytes.Repeat([]byte{'v'}, 100)
	for i := 0; i < 5000; i++ {
		if err := d.Put(a16key(i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitCompactions(t, d)
	snap := d.NewSnapshot()
	defer snap.Release()
	if err := d.DeleteRange(nil, []byte("\xff"), nil); err != nil {
		t.Fatal(err)
	}
	c0 := d.Metrics().CompactionBytesWritten
	for i := 0; i < 20000; i++ {
		if err := d.Put(a16key(i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitCompactions(t, d)
	written := d.Metrics().CompactionBytesWritten - c0
	ref := d.loadReadState()
	var largest uint64
	for l := 1; l < NumLevels; l++ {
		for _, f := range ref.rs.v.Files[l] {
			largest = max(largest, f.Size)
		}
	}
	ref.unref()
	if largest > 8*uint64(o.TargetFileSize) || written > 10<<20 {
		t.Fatalf("largest table %d bytes (TargetFileSize %d); compactions wrote %d bytes for ~2.3 MB of puts", largest, o.TargetFileSize, written)
	}
	t.Logf("largest table %d bytes (TargetFileSize %d); compactions wrote %d bytes; %d tombstones in tables",
		largest, o.TargetFileSize, written, d.Metrics().RangeTombstones)
	// The split tombstone still hides every old key from the current
	// view, and the snapshot still sees them all.
	for i := 0; i < 20000; i += 7 {
		v, err := d.Get(a16key(i), nil)
		if err != nil || !bytes.Equal(v, val) {
			t.Fatalf("Get(%q) = %q, %v after the rewrite", a16key(i), v, err)
		}
		v, err = d.Get(a16key(i), &ReadOptions{Snapshot: snap})
		if i < 5000 && (err != nil || !bytes.Equal(v, val)) || i >= 5000 && !errors.Is(err, ErrNotFound) {
			t.Fatalf("snapshot Get(%q) = %q, %v", a16key(i), v, err)
		}
	}
	it := d.NewIterator(&ReadOptions{Snapshot: snap})
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 5000 {
		t.Fatalf("the snapshot scanned %d keys (%v), want 5000", n, err)
	}
}
