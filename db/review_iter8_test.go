package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// review8Families draw user keys whose level bounds stress the level
// index: long common prefixes with differences only past the 8-byte
// window, keys that are proper prefixes of each other, 0x00 and 0xff
// bytes, the empty key and very long keys.
var review8Families = map[string]func(rng *rand.Rand) []byte{
	"beyond-window": func(rng *rand.Rand) []byte {
		k := []byte("tenant:")
		k = append(k, []string{"aaaaaaaaaaaa", "aaaaaaaaaaab", "aaaaaaaaaaaa\x00"}[rng.Intn(3)]...)
		return append(k, fmt.Sprintf("%05d", rng.Intn(3000))...)
	},
	"prefixes": func(rng *rand.Rand) []byte {
		k := []byte("p")
		for n := rng.Intn(14); n > 0; n-- {
			k = append(k, []byte{0, 0, 0, 1, 0xff, 0xff}[rng.Intn(6)])
		}
		return k
	},
	"tiny": func(rng *rand.Rand) []byte {
		k := make([]byte, rng.Intn(4))
		for i := range k {
			k[i] = []byte{0, 1, 0xfe, 0xff}[rng.Intn(4)]
		}
		return k
	},
	"long": func(rng *rand.Rand) []byte {
		k := bytes.Repeat([]byte{0xff}, 200+rng.Intn(3))
		return append(k, fmt.Sprintf("%04d", rng.Intn(2000))...)
	},
}

func init() {
	fams := []func(*rand.Rand) []byte{review8Families["beyond-window"], review8Families["prefixes"], review8Families["tiny"], review8Families["long"]}
	review8Families["mixed"] = func(rng *rand.Rand) []byte {
		if i := rng.Intn(5); i < 4 {
			return fams[i](rng)
		}
		return []byte(fmt.Sprintf("k%06d", rng.Intn(5000)))
	}
}

// review8Probes returns keys to ask: the model's keys, their neighbours
// (one byte more, one less, last byte bumped) and fresh draws.
func review8Probes(rng *rand.Rand, model map[string]string, gen func(*rand.Rand) []byte, n int) [][]byte {
	var keys [][]byte
	for k := range model {
		if rng.Intn(3) == 0 {
			continue
		}
		b := []byte(k)
		keys = append(keys, b)
		switch rng.Intn(4) {
		case 0:
			keys = append(keys, append(slices.Clone(b), 0))
		case 1:
			if len(b) > 0 {
				keys = append(keys, slices.Clone(b[:len(b)-1]))
			}
		case 2:
			if len(b) > 0 {
				c := slices.Clone(b)
				c[len(c)-1]++
				keys = append(keys, c)
			}
		}
	}
	for i := 0; i < n; i++ {
		keys = append(keys, gen(rng))
	}
	keys = append(keys, nil, []byte{}, []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	rng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
	return keys
}

func review8CheckGet(t *testing.T, d *DB, model map[string]string, keys [][]byte, ro *ReadOptions, what string) {
	t.Helper()
	for n, k := range keys {
		v, err := d.Get(k, ro)
		want, ok := model[string(k)]
		if ok != (err == nil) || ok && string(v) != want || !ok && !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: Get(%x) = %q, %v; want %q, %v", what, k, v, err, want, ok)
		}
		if n%16 == 0 {
			v, _, err := d.ExplainGet(k, ro)
			if ok != (err == nil) || ok && string(v) != want || !ok && !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: ExplainGet(%x) = %q, %v; want %q, %v", what, k, v, err, want, ok)
			}
		}
	}
}

func review8CheckMultiGet(t *testing.T, d *DB, model map[string]string, keys [][]byte, ro *ReadOptions, what string) {
	t.Helper()
	for start := 0; start < len(keys); {
		n := 2 + rand.Intn(300)
		batch := keys[start:min(len(keys), start+n)]
		start += n
		if len(batch) > 3 && rand.Intn(4) == 0 {
			batch = append(slices.Clone(batch), batch[0], batch[len(batch)/2]) // repeats
		}
		vals, errs := d.MultiGet(batch, ro)
		if len(vals) != len(batch) || len(errs) != len(batch) {
			t.Fatalf("%s: MultiGet of %d keys: %d values, %d errors", what, len(batch), len(vals), len(errs))
		}
		for i, k := range batch {
			want, ok := model[string(k)]
			if ok != (errs[i] == nil) || ok && string(vals[i]) != want || !ok && !errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("%s: MultiGet(%d keys)[%d] %x = %q, %v; want %q, %v", what, len(batch), i, k, vals[i], errs[i], want, ok)
			}
		}
	}
}

func review8Sorted(model map[string]string) []string {
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// review8CheckIter scans with random bounds in both directions and with
// seeks, against the model.
func review8CheckIter(t *testing.T, d *DB, model map[string]string, rng *rand.Rand, gen func(*rand.Rand) []byte, snap *Snapshot, what string) {
	t.Helper()
	sorted := review8Sorted(model)
	pick := func() []byte {
		if len(sorted) > 0 && rng.Intn(2) == 0 {
			b := []byte(sorted[rng.Intn(len(sorted))])
			switch rng.Intn(3) {
			case 0:
				return append(b, 0)
			case 1:
				if len(b) > 0 {
					return b[:len(b)-1]
				}
			}
			return b
		}
		return gen(rng)
	}
	for q := 0; q < 30; q++ {
		ro := &ReadOptions{Snapshot: snap}
		switch rng.Intn(4) {
		case 0:
		case 1:
			ro.LowerBound = pick()
		case 2:
			ro.UpperBound = pick()
		default:
			ro.LowerBound, ro.UpperBound = pick(), pick()
			if bytes.Compare(ro.LowerBound, ro.UpperBound) > 0 {
				ro.LowerBound, ro.UpperBound = ro.UpperBound, ro.LowerBound
			}
		}
		var want []string
		for _, k := range sorted {
			if ro.LowerBound != nil && k < string(ro.LowerBound) || ro.UpperBound != nil && k >= string(ro.UpperBound) {
				continue
			}
			want = append(want, k)
		}
		it := d.NewIterator(ro)
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Value()) != model[string(it.Key())] {
				t.Fatalf("%s: forward %x = %q, want %q", what, it.Key(), it.Value(), model[string(it.Key())])
			}
			got = append(got, string(it.Key()))
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: forward scan [%x, %x): %d keys, want %d\n got %x\nwant %x", what, ro.LowerBound, ro.UpperBound, len(got), len(want), got, want)
		}
		got = got[:0]
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, string(it.Key()))
		}
		slices.Reverse(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: backward scan [%x, %x): %d keys, want %d", what, ro.LowerBound, ro.UpperBound, len(got), len(want))
		}
		// A seek, and its explanation.
		s := pick()
		i := sort.SearchStrings(want, string(s))
		ok := it.Seek(s)
		if ok != (i < len(want)) || ok && string(it.Key()) != want[i] {
			t.Fatalf("%s: Seek(%x) in [%x, %x) = %v %x, want index %d of %d", what, s, ro.LowerBound, ro.UpperBound, ok, it.Key(), i, len(want))
		}
		if q%5 == 0 {
			tr, err := d.ExplainSeek(s, ro)
			if err != nil {
				t.Fatalf("%s: ExplainSeek(%x): %v", what, s, err)
			}
			// Explain clamps the seek key to the bounds as Seek does.
			if tr.Found != ok || ok && string(tr.Result) != want[i] {
				t.Fatalf("%s: ExplainSeek(%x) in [%x, %x) = %v %x, Seek %v %x", what, s, ro.LowerBound, ro.UpperBound, tr.Found, tr.Result, ok, it.Key())
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReview8ModelOddKeys: Get, MultiGet (in the caller and over
// helpers) and bounded iterators in both directions against a map model,
// for key families aimed at the level index, across flushes, compactions,
// snapshots and reopens.
func TestReview8ModelOddKeys(t *testing.T) {
	rounds, ops := 6, 1500
	if testing.Short() || raceEnabled {
		rounds, ops = 3, 600
	}
	names := make([]string, 0, len(review8Families))
	for name := range review8Families {
		names = append(names, name)
	}
	sort.Strings(names)
	for ni, name := range names {
		gen := review8Families[name]
		par := 2 + ni%7
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			o := smallTree(fs)
			o.TargetFileSize = 4 << 10
			o.MultiGetParallelism = par
			d := mustOpen(t, "/db", o)
			defer func() { d.Close() }()
			rng := rand.New(rand.NewSource(int64(len(name)) * 7))
			model := map[string]string{}
			for round := 0; round < rounds; round++ {
				for i := 0; i < ops; i++ {
					k := gen(rng)
					if rng.Intn(5) == 0 {
						if err := d.Delete(k, nil); err != nil {
							t.Fatal(err)
						}
						delete(model, string(k))
						continue
					}
					v := fmt.Sprintf("%d.%d.%s", round, i, bytes.Repeat([]byte("v"), rng.Intn(40)))
					if err := d.Put(k, []byte(v), nil); err != nil {
						t.Fatal(err)
					}
					model[string(k)] = v
				}
				snap := d.NewSnapshot()
				snapModel := make(map[string]string, len(model))
				for k, v := range model {
					snapModel[k] = v
				}
				// Writes the snapshot does not see.
				for i := 0; i < 50; i++ {
					k := gen(rng)
					d.Put(k, []byte("after-snapshot"), nil)
					model[string(k)] = "after-snapshot"
				}
				switch round % 3 {
				case 0:
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				case 1:
					if err := d.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				waitCompactions(t, d)
				what := fmt.Sprintf("%s round %d", name, round)
				probes := review8Probes(rng, model, gen, 300)
				review8CheckGet(t, d, model, probes, nil, what)
				review8CheckMultiGet(t, d, model, probes, nil, what)
				review8CheckIter(t, d, model, rng, gen, nil, what)
				sprobes := review8Probes(rng, snapModel, gen, 100)
				sro := &ReadOptions{Snapshot: snap}
				review8CheckGet(t, d, snapModel, sprobes, sro, what+" snapshot")
				review8CheckMultiGet(t, d, snapModel, sprobes, sro, what+" snapshot")
				review8CheckIter(t, d, snapModel, rng, gen, snap, what+" snapshot")
				snap.Release()
				if round%2 == 1 {
					if err := d.Close(); err != nil {
						t.Fatal(err)
					}
					d = mustOpen(t, "/db", o)
					review8CheckGet(t, d, model, probes, nil, what+" reopened")
					review8CheckMultiGet(t, d, model, probes, nil, what+" reopened")
				}
			}
			m := d.Metrics()
			deep := 0
			for l := 1; l < NumLevels; l++ {
				deep += m.Levels[l].Files
			}
			if deep < 2 {
				t.Logf("%s: only %d tables below L0", name, deep)
			}
		})
	}
}

// TestReview8MultiGetConcurrent: MultiGet spread over helpers, under
// concurrent group writes (each batch sets every key of a group to one
// generation, or deletes the group), flushes, compactions, snapshots
// taken and released, and finally Close racing the readers. Every answer
// must be one consistent view (a group's keys all of one generation,
// never older than one already seen), equal to Get's through a snapshot,
// or ErrClosed once the store closes; no panic, hang or leaked goroutine.
func TestReview8MultiGetConcurrent(t *testing.T) {
	dur := 3 * time.Second
	if testing.Short() {
		dur = 700 * time.Millisecond
	}
	for _, tc := range []struct {
		name string
		par  int
		mmap bool
	}{{"par2", 2, true}, {"par8-pread", 8, false}, {"par3", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			o := smallTree(vfs.NewMem())
			dir := "/db"
			if tc.mmap {
				o.FS, dir = nil, t.TempDir()
			}
			o.MultiGetParallelism = tc.par
			o.DisableMmapReads = !tc.mmap
			if !tc.mmap {
				o.MaxOpenFiles = 16
			}
			d := mustOpen(t, dir, o)
			const groups, per = 16, 120
			key := func(g, i int) []byte { return []byte(fmt.Sprintf("g%02d/%08d", g, i*7)) }
			var stop atomic.Bool
			var closed atomic.Bool
			var wg sync.WaitGroup
			errc := make(chan error, 16)
			report := func(err error) {
				select {
				case errc <- err:
				default:
				}
				stop.Store(true)
			}
			// Writer.
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(1))
				gen := make([]int, groups)
				pad := bytes.Repeat([]byte("x"), 60)
				for !stop.Load() {
					g := rng.Intn(groups)
					gen[g]++
					var b Batch
					switch r := rng.Intn(40); {
					case r == 0:
						// A range tombstone: MultiGet answers through Get
						// until compactions drop it.
						b.DeleteRange([]byte(fmt.Sprintf("g%02d/", g)), []byte(fmt.Sprintf("g%02d0", g)))
					case r < 6:
						for i := 0; i < per; i++ {
							b.Delete(key(g, i))
						}
					default:
						v := append([]byte(fmt.Sprintf("%08d|", gen[g])), pad...)
						for i := 0; i < per; i++ {
							b.Put(key(g, i), v)
						}
					}
					if err := d.Write(&b, nil); err != nil {
						if closed.Load() && errors.Is(err, ErrClosed) {
							return
						}
						report(fmt.Errorf("write: %w", err))
						return
					}
				}
			}()
			// Compactions.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					var err error
					if i%4 == 3 {
						err = d.CompactRange(key(i%groups, 0), key((i+3)%groups, 0))
					} else {
						err = d.Flush()
					}
					if err != nil && !(closed.Load() && errors.Is(err, ErrClosed)) {
						report(fmt.Errorf("flush/compact: %w", err))
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			// Readers.
			for r := 0; r < 4; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(r) + 10))
					seen := make([]int, groups)
					for !stop.Load() {
						var keys [][]byte
						var gs []int
						ng := 1 + rng.Intn(3)
						for n := 0; n < ng; n++ {
							g := rng.Intn(groups)
							for i := 0; i < per; i++ {
								keys = append(keys, key(g, i))
								gs = append(gs, g)
							}
						}
						// Absent keys in between.
						for n := rng.Intn(30); n > 0; n-- {
							keys = append(keys, []byte(fmt.Sprintf("g%02d/%08dz", rng.Intn(groups), rng.Intn(per*7))))
							gs = append(gs, -1)
						}
						perm := rng.Perm(len(keys))
						pk, pg := make([][]byte, len(keys)), make([]int, len(keys))
						for i, p := range perm {
							pk[i], pg[i] = keys[p], gs[p]
						}
						var snap *Snapshot
						var ro *ReadOptions
						if rng.Intn(3) == 0 {
							snap = d.NewSnapshot()
							ro = &ReadOptions{Snapshot: snap}
						}
						vals, errs := d.MultiGet(pk, ro)
						if closed.Load() {
							if snap != nil {
								snap.Release()
							}
							for i := range errs {
								if errs[i] != nil && !errors.Is(errs[i], ErrClosed) && !errors.Is(errs[i], ErrNotFound) {
									report(fmt.Errorf("MultiGet during Close: %x: %v", pk[i], errs[i]))
									return
								}
							}
							continue
						}
						genOf := map[int]string{}
						for i, g := range pg {
							if g < 0 {
								if !errors.Is(errs[i], ErrNotFound) {
									report(fmt.Errorf("absent %s: %q, %v", pk[i], vals[i], errs[i]))
									return
								}
								continue
							}
							var s string
							switch {
							case errs[i] == nil:
								s = string(vals[i][:8])
							case errors.Is(errs[i], ErrNotFound):
								s = "deleted"
							default:
								if closed.Load() && errors.Is(errs[i], ErrClosed) {
									return
								}
								report(fmt.Errorf("MultiGet %s: %v", pk[i], errs[i]))
								return
							}
							if prev, ok := genOf[g]; ok && prev != s {
								report(fmt.Errorf("MultiGet of %d keys (par %d): group %d answered %s and %s in one batch", len(pk), tc.par, g, prev, s))
								return
							}
							genOf[g] = s
						}
						for g, s := range genOf {
							var n int
							if s != "deleted" {
								fmt.Sscanf(s, "%d", &n)
								if n < seen[g] {
									report(fmt.Errorf("group %d went back from generation %d to %d", g, seen[g], n))
									return
								}
								seen[g] = n
							}
						}
						if snap != nil {
							// Get through the same snapshot agrees.
							for i := 0; i < len(pk); i += 1 + rng.Intn(8) {
								v, err := d.Get(pk[i], ro)
								if !bytes.Equal(v, vals[i]) || (err == nil) != (errs[i] == nil) {
									if closed.Load() {
										break
									}
									report(fmt.Errorf("snapshot: Get(%s) = %.9q, %v; MultiGet %.9q, %v", pk[i], v, err, vals[i], errs[i]))
									return
								}
							}
							snap.Release()
						}
					}
				}(r)
			}
			select {
			case err := <-errc:
				stop.Store(true)
				wg.Wait()
				d.Close()
				t.Fatal(err)
			case <-time.After(dur):
			}
			// Close while the readers run.
			closed.Store(true)
			done := make(chan error, 1)
			go func() { done <- d.Close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close hung")
			}
			time.Sleep(20 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			select {
			case err := <-errc:
				t.Fatal(err)
			default:
			}
			// After Close every MultiGet fails with ErrClosed.
			_, errs := d.MultiGet([][]byte{key(0, 0), key(1, 1), key(2, 2)}, nil)
			for _, err := range errs {
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("MultiGet after Close: %v", err)
				}
			}
			requireGoroutinesSettle(t, before)
		})
	}
}

// TestReview8SharedBoundaryOddKeys: a LevelDB-format store whose level 1
// splits keys' versions between neighbouring tables (SharedBoundaries),
// over keys that differ only past the index's window, with deletions
// shadowing level 2: Get, MultiGet and bounded iterators in both
// directions against the model, opened read-only and read-write, after
// partial compactions and a reopen.
func TestReview8SharedBoundaryOddKeys(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	var keys []string
	seen := map[string]bool{}
	gen := review8Families["beyond-window"]
	for len(keys) < 400 {
		k := string(gen(rng))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	model := map[string]string{}
	// Level 2: every other key, old values.
	var tables []sbTable
	num := uint64(10)
	seq := uint64(1)
	var ents []sbEntry
	for i, k := range keys {
		if i%2 == 0 {
			v := fmt.Sprintf("old-%d", i)
			ents = append(ents, sbEntry{k, seq, base.KindSet, v})
			model[k] = v
			seq++
		}
		if len(ents) == 25 || i == len(keys)-1 && len(ents) > 0 {
			tables = append(tables, sbTable{num, 2, ents})
			num++
			ents = nil
		}
	}
	// Level 1: newer sets and deletions over a third of the keys; some
	// tables end with a key's newer version and the next starts with an
	// older one.
	seq = 10000
	ents = nil
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if i%3 != 0 {
			continue
		}
		kind, v := base.KindSet, fmt.Sprintf("new-%d", i)
		if rng.Intn(4) == 0 {
			kind, v = base.KindDelete, ""
		}
		ents = append(ents, sbEntry{k, seq, kind, v})
		if kind == base.KindDelete {
			delete(model, k)
		} else {
			model[k] = v
		}
		seq++
		if len(ents) >= 5+rng.Intn(10) {
			tables = append(tables, sbTable{num, 1, ents})
			num++
			ents = nil
			if rng.Intn(2) == 0 {
				// An older version of k starts the next table.
				ents = append(ents, sbEntry{k, 5000 + uint64(i), base.KindSet, "shadowed"})
			}
		}
	}
	if len(ents) > 0 {
		tables = append(tables, sbTable{num, 1, ents})
	}
	dir := filepath.Join(t.TempDir(), "db")
	writeHandStoreWith(t, dir, tables, seq+1, 128)
	check := func(d *DB, what string) {
		t.Helper()
		var probes [][]byte
		for _, k := range keys {
			probes = append(probes, []byte(k), []byte(k+"\x00"), []byte(k[:len(k)-1]))
		}
		for i := 0; i < 100; i++ {
			probes = append(probes, gen(rng))
		}
		review8CheckGet(t, d, model, probes, nil, what)
		review8CheckMultiGet(t, d, model, probes, nil, what)
		review8CheckIter(t, d, model, rng, gen, nil, what)
	}
	for _, ro := range []bool{true, false} {
		d, err := Open(dir, &Options{ReadOnly: ro, DisableAutomaticCompactions: true, MultiGetParallelism: 4})
		if err != nil {
			t.Fatal(err)
		}
		if !d.readStateForTest().v.SharedBoundaries[1] {
			t.Fatal("level 1 has no shared boundary")
		}
		check(d, fmt.Sprintf("read-only %v", ro))
		if !ro {
			for i := 0; i < 4; i++ {
				a, b := keys[rng.Intn(len(keys))], keys[rng.Intn(len(keys))]
				if a > b {
					a, b = b, a
				}
				if err := d.CompactRange([]byte(a), []byte(b)); err != nil {
					t.Fatal(err)
				}
				check(d, fmt.Sprintf("after CompactRange(%q, %q)", a, b))
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(dir, &Options{MultiGetParallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	check(d, "reopened")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check(d, "compacted")
	d.Close()
}

// TestReview8OldReadStatesAcrossCompactions: iterators and snapshots
// taken at many moments keep reading their tables (through the
// FileMetadata shortcut and the map) while compactions delete them from
// newer versions and the table cache evicts and reopens; with pread, a
// small MaxOpenFiles and concurrent MultiGets over helpers. Every
// iterator sees exactly its moment's keys, both directions.
func TestReview8OldReadStatesAcrossCompactions(t *testing.T) {
	rounds := 12
	if testing.Short() || raceEnabled {
		rounds = 5
	}
	for _, mmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) {
			o := smallTree(vfs.NewMem())
			dir := "/db"
			if mmap {
				// Tables mapped: only the operating system's files map.
				o.FS, dir = nil, t.TempDir()
			}
			o.DisableMmapReads = !mmap
			o.MaxOpenFiles = 16
			o.MultiGetParallelism = 4
			o.BlockCacheSize = 32 << 10
			d := mustOpen(t, dir, o)
			defer d.Close()
			rng := rand.New(rand.NewSource(3))
			gen := review8Families["mixed"]
			model := map[string]string{}
			type held struct {
				it    *Iterator
				snap  *Snapshot
				model map[string]string
			}
			var hs []held
			var stop atomic.Bool
			var wg sync.WaitGroup
			var bad atomic.Value
			// Background MultiGets over the latest state: answers must be
			// values ever written (no errors other than not found).
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewSource(99))
				for !stop.Load() {
					keys := make([][]byte, 100)
					for i := range keys {
						keys[i] = gen(r)
					}
					_, errs := d.MultiGet(keys, nil)
					for i, err := range errs {
						if err != nil && !errors.Is(err, ErrNotFound) {
							bad.Store(fmt.Sprintf("MultiGet %x: %v", keys[i], err))
							return
						}
					}
				}
			}()
			for round := 0; round < rounds; round++ {
				for i := 0; i < 800; i++ {
					k := gen(rng)
					if rng.Intn(6) == 0 {
						d.Delete(k, nil)
						delete(model, string(k))
					} else {
						v := fmt.Sprintf("r%d.%d", round, i)
						d.Put(k, []byte(v), nil)
						model[string(k)] = v
					}
				}
				cp := make(map[string]string, len(model))
				for k, v := range model {
					cp[k] = v
				}
				s := d.NewSnapshot()
				hs = append(hs, held{d.NewIterator(nil), s, cp})
				if round%3 == 2 {
					if err := d.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
				} else if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				// Check and drop a random older one.
				if len(hs) > 3 {
					j := rng.Intn(len(hs))
					h := hs[j]
					hs = append(hs[:j], hs[j+1:]...)
					review8CheckHeld(t, d, h.it, h.snap, h.model, rng, gen, fmt.Sprintf("round %d held %d", round, j))
				}
			}
			stop.Store(true)
			wg.Wait()
			if s, _ := bad.Load().(string); s != "" {
				t.Fatal(s)
			}
			for j, h := range hs {
				review8CheckHeld(t, d, h.it, h.snap, h.model, rng, gen, fmt.Sprintf("final held %d", j))
			}
			review8CheckGet(t, d, model, review8Probes(rng, model, gen, 100), nil, "final")
		})
	}
}

func review8CheckHeld(t *testing.T, d *DB, it *Iterator, snap *Snapshot, model map[string]string, rng *rand.Rand, gen func(*rand.Rand) []byte, what string) {
	t.Helper()
	sorted := review8Sorted(model)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		if model[string(it.Key())] != string(it.Value()) {
			t.Fatalf("%s: %x = %q, want %q", what, it.Key(), it.Value(), model[string(it.Key())])
		}
		got = append(got, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got, sorted) {
		t.Fatalf("%s: iterator saw %d keys, want %d", what, len(got), len(sorted))
	}
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	if n != len(sorted) {
		t.Fatalf("%s: backwards %d keys, want %d", what, n, len(sorted))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	ro := &ReadOptions{Snapshot: snap}
	probes := review8Probes(rng, model, gen, 50)
	review8CheckGet(t, d, model, probes, ro, what+" snapshot")
	review8CheckMultiGet(t, d, model, probes, ro, what+" snapshot")
	review8CheckIter(t, d, model, rng, gen, snap, what+" snapshot")
	snap.Release()
}

// TestReview8MultiGetReadFaults: with table reads failing at random (no
// block cache, pread, few descriptors, tables reopened after Close), a
// MultiGet over helpers answers each key with its value, ErrNotFound only
// for an absent key, or an error; never a wrong value or a present key
// reported absent. Once the faults stop, every answer is right (no
// failed open or read is remembered).
func TestReview8MultiGetReadFaults(t *testing.T) {
	rounds := 40
	if testing.Short() || raceEnabled {
		rounds = 10
	}
	ffs := vfs.NewFaultFS(vfs.NewMem(), nil)
	o := smallTree(ffs)
	o.DisableBlockCache = true
	o.DisableMmapReads = true
	o.MaxOpenFiles = 16
	o.MultiGetParallelism = 4
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	rng := rand.New(rand.NewSource(5))
	gen := review8Families["mixed"]
	model := map[string]string{}
	for i := 0; i < 6000; i++ {
		k := gen(rng)
		v := fmt.Sprintf("v%d", i)
		if err := d.Put(k, []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		model[string(k)] = v
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		k := gen(rng)
		d.Put(k, []byte("top"), nil)
		model[string(k)] = "top"
	}
	d.Flush()
	waitCompactions(t, d)
	// Reopen so that tables are opened (and their filters read) under
	// faults too.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	waitCompactions(t, d)
	ffs.SetInjector(vfs.Fault{Ops: vfs.OpRead | vfs.OpOpen, PathContains: ".sst", Count: -1, Probability: 0.05, Seed: 1}.Injector())
	sawErr := 0
	for round := 0; round < rounds; round++ {
		probes := review8Probes(rng, model, gen, 100)
		for start := 0; start < len(probes); start += 200 {
			batch := probes[start:min(start+200, len(probes))]
			vals, errs := d.MultiGet(batch, nil)
			for i, k := range batch {
				want, ok := model[string(k)]
				switch {
				case errs[i] == nil:
					if !ok || string(vals[i]) != want {
						t.Fatalf("round %d: MultiGet %x = %q, want %q, %v", round, k, vals[i], want, ok)
					}
				case errors.Is(errs[i], ErrNotFound):
					if ok {
						t.Fatalf("round %d: MultiGet %x not found, want %q (under read faults)", round, k, want)
					}
				default:
					sawErr++
				}
			}
		}
	}
	ffs.SetInjector(nil)
	if sawErr == 0 {
		t.Error("no read fault reached MultiGet")
	}
	probes := review8Probes(rng, model, gen, 200)
	review8CheckGet(t, d, model, probes, nil, "after faults")
	review8CheckMultiGet(t, d, model, probes, nil, "after faults")
	review8CheckIter(t, d, model, rng, gen, nil, "after faults")
}
