package db

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestExplainGetAgainstGet checks ExplainGet's answers against Get's on a
// store with keys in the memtable, level 0 and deeper levels, deletions,
// a range tombstone and a snapshot, and checks each trace's story: the
// steps' outcomes agree with the answer, a filter's "no" reads no block,
// a false positive is a "maybe" whose block did not hold the key, and
// ExplainGet counts in Metrics exactly as Get does.
func TestExplainGetAgainstGet(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"bloom", Options{WriteBufferSize: 8 << 10, BlockSize: 512}},
		// 1 bit per key: many false positives to name.
		{"weakfilter", Options{WriteBufferSize: 8 << 10, BlockSize: 512, FilterPolicy: filter.NewBloomPolicy(1)}},
		{"nofilter", Options{WriteBufferSize: 8 << 10, FilterPolicy: filter.None, DisableBlockCache: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.FS = vfs.NewMem()
			d := mustOpen(t, "/db", &o)
			defer d.Close()
			rng := rand.New(rand.NewSource(3))
			for round := 0; round < 6; round++ {
				for i := 0; i < 500; i++ {
					k := []byte(fmt.Sprintf("key%05d", 2*rng.Intn(2000)))
					if rng.Intn(8) == 0 {
						d.Delete(k, nil)
					} else {
						d.Put(k, []byte(fmt.Sprintf("v%d-%d", round, i)), nil)
					}
				}
				if round == 2 {
					if err := d.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				if round == 4 {
					if err := d.DeleteRange([]byte("key01000"), []byte("key01400"), nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			snap := d.NewSnapshot()
			defer snap.Release()
			d.Put([]byte("key00002"), []byte("after the snapshot"), nil)
			// No flush or compaction between a Get and its ExplainGet.
			if err := d.WaitForCompactions(); err != nil {
				t.Fatal(err)
			}
			var falsePositives, filterNo, deleted, found int
			for i := 0; i < 4000; i++ {
				k := []byte(fmt.Sprintf("key%05d", i))
				for _, ro := range []*ReadOptions{nil, {Snapshot: snap}} {
					m0 := d.Metrics()
					want, werr := d.Get(k, ro)
					m1 := d.Metrics()
					got, tr, err := d.ExplainGet(k, ro)
					m2 := d.Metrics()
					if !bytes.Equal(got, want) || !errors.Is(err, ErrNotFound) != !errors.Is(werr, ErrNotFound) || (err == nil) != (werr == nil) {
						t.Fatalf("%q: ExplainGet = %q, %v; Get = %q, %v\n%s", k, got, err, want, werr, tr)
					}
					if a, b := m1.Levels, m2.Levels; len(a) == len(b) {
						for l := range a {
							da, db := a[l].Filter.Checks-m0.Levels[l].Filter.Checks, b[l].Filter.Checks-a[l].Filter.Checks
							if da != db {
								t.Fatalf("%q: level %d filter checks: Get %d, ExplainGet %d", k, l, da, db)
							}
						}
					}
					checkTrace(t, tr, err)
					for _, s := range tr.Steps {
						switch s.Outcome {
						case OutcomeFalsePositive:
							falsePositives++
						case OutcomeFilterNo:
							filterNo++
						}
					}
					switch tr.Outcome {
					case OutcomeDeleted:
						deleted++
					case OutcomeFound:
						found++
					}
				}
			}
			t.Logf("%d found, %d deleted; steps: %d filter no, %d false positives", found, deleted, filterNo, falsePositives)
			if found == 0 || deleted == 0 {
				t.Fatalf("the keys did not exercise found (%d) and deleted (%d) lookups", found, deleted)
			}
			if tc.name == "weakfilter" && (falsePositives == 0 || filterNo == 0) {
				t.Fatalf("a 1-bit filter gave %d false positives and %d skips", falsePositives, filterNo)
			}
		})
	}
}

// checkTrace checks that a trace tells a consistent story.
func checkTrace(t *testing.T, tr *LookupTrace, err error) {
	t.Helper()
	if len(tr.Steps) == 0 {
		t.Fatalf("%q: a trace without steps", tr.Key)
	}
	last := tr.Steps[len(tr.Steps)-1]
	switch tr.Outcome {
	case OutcomeFound:
		if err != nil || last.Outcome != OutcomeFound {
			t.Fatalf("%q: found, but err %v and the last step %q\n%s", tr.Key, err, last.Outcome, tr)
		}
	case OutcomeDeleted:
		if !errors.Is(err, ErrNotFound) || last.Outcome != OutcomeDeleted {
			t.Fatalf("%q: deleted, but err %v and the last step %q\n%s", tr.Key, err, last.Outcome, tr)
		}
	case OutcomeNotFound:
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("%q: not found, but err %v\n%s", tr.Key, err, tr)
		}
	default:
		t.Fatalf("%q: outcome %q (err %v)\n%s", tr.Key, tr.Outcome, err, tr)
	}
	for _, s := range tr.Steps {
		switch s.Outcome {
		case OutcomeFilterNo:
			if s.FilterPolicy == "" || s.FilterMayContain || len(s.Blocks) > 0 {
				t.Fatalf("%q: a filter 'no' step %+v", tr.Key, s)
			}
		case OutcomeFalsePositive:
			if s.FilterPolicy == "" || !s.FilterMayContain || len(s.Blocks) == 0 {
				t.Fatalf("%q: a false positive step %+v", tr.Key, s)
			}
		case OutcomeAbsent:
			if s.FilterPolicy != "" || len(s.Blocks) == 0 {
				t.Fatalf("%q: an absent step %+v", tr.Key, s)
			}
		case OutcomeOutsideRange:
			if bytes.Compare(tr.Key, s.Smallest) >= 0 && bytes.Compare(tr.Key, s.Largest) <= 0 {
				t.Fatalf("%q: 'outside' a table of [%q, %q]", tr.Key, s.Smallest, s.Largest)
			}
		}
		for _, b := range s.Blocks {
			if b.DecodedSize <= 0 || !b.Cached && b.StoredSize == 0 {
				t.Fatalf("%q: block %+v", tr.Key, b)
			}
		}
	}
}

// TestExplainGetRendering checks the text and JSON forms of a trace.
func TestExplainGetRendering(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	for i := 0; i < 1000; i++ {
		d.Put([]byte(fmt.Sprintf("user:%04d", 2*i)), []byte("v"), nil)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	d.Put([]byte("user:0002"), []byte("newer"), nil)
	_, tr, err := d.ExplainGet([]byte("user:0042"), nil)
	if err != nil {
		t.Fatal(err)
	}
	text := tr.String()
	for _, want := range []string{`get "user:0042"  →  found`, "memtable           filter: not there", "L0  ", "filter bloomkv.BloomFilter64v2 10.1 bits/key: maybe", "→ index (in memory) → block @", "(file, ", "→ found"} {
		if !strings.Contains(text, want) {
			t.Errorf("the trace lacks %q:\n%s", want, text)
		}
	}
	_, tr, _ = d.ExplainGet([]byte("user:0043"), nil)
	if text := tr.String(); !strings.Contains(text, "→  not found") || !strings.Contains(text, "bits/key: no") {
		t.Errorf("an absent key's trace:\n%s", text)
	}
	_, tr, _ = d.ExplainGet([]byte("user:0042"), nil)
	if text := tr.String(); !strings.Contains(text, "(cache, ") {
		t.Errorf("a second lookup should hit the block cache:\n%s", text)
	}
	js, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var back LookupTrace
	if err := json.Unmarshal(js, &back); err != nil || back.Outcome != OutcomeFound || len(back.Steps) != len(tr.Steps) || !back.Steps[len(back.Steps)-1].Blocks[0].Cached {
		t.Errorf("JSON round trip: %v, %s", err, js)
	}
	// The memtable's filter lets its own key through, and the search
	// finds it.
	_, tr, _ = d.ExplainGet([]byte("user:0002"), nil)
	if text := tr.String(); !strings.Contains(text, "memtable           found") || len(tr.Steps) != 1 {
		t.Errorf("a key of the memtable:\n%s", text)
	}
}

// TestExplainMemTableWithoutFilter checks that with DisableMemTableFilter
// a trace shows the memtable searched ("miss") and the filter metrics
// count nothing.
func TestExplainMemTableWithoutFilter(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableMemTableFilter: true})
	defer d.Close()
	d.Put([]byte("a"), []byte("1"), nil)
	_, tr, err := d.ExplainGet([]byte("b"), nil)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(tr.String(), "memtable           miss") {
		t.Errorf("ExplainGet(b) = %v:\n%s", err, tr)
	}
	if m := d.Metrics(); m.MemTableFilter != (FilterMetrics{}) || m.MemTableFilterBytes != 0 {
		t.Errorf("without memtable filters: %+v, %d bytes", m.MemTableFilter, m.MemTableFilterBytes)
	}
}

// TestExplainSeek checks ExplainSeek on a store with a prefix extractor:
// a seek bounded to an absent prefix lists tables its prefix filter ruled
// out and reads no block; a seek to a present prefix lands, in the table
// that holds it, on the first entry at or after the key, the one the
// iterator returns; and an unbounded seek lands in each source at or
// after the key.
func TestExplainSeek(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), Prefix: filter.FixedPrefix(6), WriteBufferSize: 16 << 10, BlockSize: 512})
	defer d.Close()
	for i := 0; i < 3000; i++ {
		d.Put([]byte(fmt.Sprintf("p%05d:%03d", 2*(i/10), i%10)), []byte("value"), nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	d.Put([]byte("p00100:005"), []byte("in the memtable"), nil)

	lo, hi := PrefixBounds([]byte("p00101"))
	tr, err := d.ExplainSeek([]byte("p00101"), &ReadOptions{LowerBound: lo, UpperBound: hi})
	if err != nil || tr.Found {
		t.Fatalf("absent prefix: %v, found %v\n%s", err, tr.Found, tr)
	}
	skipped := 0
	for _, s := range tr.Steps {
		if s.Outcome == SeekPrefixFilterNo {
			skipped++
		}
		if len(s.Blocks) > 0 {
			t.Fatalf("absent prefix: step %+v read blocks\n%s", s, tr)
		}
	}
	if skipped == 0 || !strings.Contains(tr.String(), "prefix filter: no") {
		t.Fatalf("absent prefix: no table skipped by the prefix filter\n%s", tr)
	}

	lo, hi = PrefixBounds([]byte("p00200"))
	tr, err = d.ExplainSeek([]byte("p00200:004"), &ReadOptions{LowerBound: lo, UpperBound: hi})
	if err != nil || !tr.Found || string(tr.Result) != "p00200:004" {
		t.Fatalf("present prefix: %v, %v %q\n%s", err, tr.Found, tr.Result, tr)
	}
	landed := false
	for _, s := range tr.Steps {
		if s.Level >= 0 && s.Outcome == SeekLanded && string(s.First) == "p00200:004" && len(s.Blocks) > 0 {
			landed = true
		}
	}
	if !landed {
		t.Fatalf("present prefix: no table step landed on the key\n%s", tr)
	}

	it := d.NewIterator(nil)
	defer it.Close()
	for _, k := range []string{"p00100:000", "p00100:0055", "p00555", "", "q"} {
		tr, err := d.ExplainSeek([]byte(k), nil)
		ok := it.Seek([]byte(k))
		if err != nil || tr.Found != ok || ok && !bytes.Equal(tr.Result, it.Key()) {
			t.Fatalf("seek %q: trace %v %q (%v), iterator %v %q", k, tr.Found, tr.Result, err, ok, it.Key())
		}
		for _, s := range tr.Steps {
			if s.First != nil && bytes.Compare(s.First, []byte(k)) < 0 {
				t.Fatalf("seek %q: step %+v landed before the key", k, s)
			}
		}
		if tr.Found && !strings.Contains(tr.String(), fmt.Sprintf("→  %q", tr.Result)) {
			t.Fatalf("seek %q: rendering\n%s", k, tr)
		}
	}
}

// TestExplainSeekCountsAsSeek: ExplainSeek counts in Metrics exactly what
// a plain Seek counts (the review found its trace's block reads counted on
// top: twice the blocks read without a cache, cache hits with one), and
// its trace reports the cache as the Seek met it.
func TestExplainSeekCountsAsSeek(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableBlockCache=%v", noCache), func(t *testing.T) {
			fs := vfs.NewMem()
			d := mustOpen(t, "/db", &Options{FS: fs, WriteBufferSize: 16 << 10, BlockSize: 256})
			for i := 0; i < 4000; i++ {
				d.Put([]byte(fmt.Sprintf("k%05d", 2*i)), []byte("some value to fill blocks"), nil)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			d.Close()
			type counts struct{ read, hits, misses int64 }
			measure := func(seek func(d *DB, k []byte)) counts {
				d := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true, DisableBlockCache: noCache})
				defer d.Close()
				before := d.Metrics()
				for _, k := range []string{"k00101", "k03001", "k07997", "k00101"} {
					seek(d, []byte(k))
				}
				after := d.Metrics()
				return counts{after.DataBlocksRead - before.DataBlocksRead,
					after.BlockCacheHits - before.BlockCacheHits, after.BlockCacheMisses - before.BlockCacheMisses}
			}
			plain := measure(func(d *DB, k []byte) {
				it := d.NewIterator(nil)
				it.Seek(k)
				it.Close()
			})
			var cachedSeen bool
			explained := measure(func(d *DB, k []byte) {
				tr, err := d.ExplainSeek(k, nil)
				if err != nil || !tr.Found {
					t.Fatalf("ExplainSeek(%s): %v %v", k, err, tr)
				}
				for _, s := range tr.Steps {
					for _, b := range s.Blocks {
						cachedSeen = cachedSeen || b.Cached
					}
				}
			})
			if plain != explained || plain.read == 0 {
				t.Fatalf("a plain Seek counted %+v, ExplainSeek %+v", plain, explained)
			}
			// The fourth seek repeats the first: with a cache, its block
			// is there, and the trace says so.
			if cachedSeen == noCache {
				t.Fatalf("a block reported cached: %v, with the cache disabled: %v", cachedSeen, noCache)
			}
		})
	}
}

// TestExplainHugeKeys: a trace of keys near MaxKeySize renders in a few
// hundred bytes, not megabytes (the review saw a 33.5 MB explain).
func TestExplainHugeKeys(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, MaxKeySize) }
	for _, k := range [][]byte{big('a'), big('c'), []byte("m")} {
		if err := d.Put(k, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	_, tr, _ := d.ExplainGet([]byte("b"), nil)
	st, _ := d.ExplainSeek(big('b'), &ReadOptions{LowerBound: big('a')})
	for _, s := range []string{tr.String(), st.String()} {
		if len(s) > 2000 || !strings.Contains(s, "bytes)") {
			t.Fatalf("a trace of %d bytes:\n%.500s", len(s), s)
		}
	}
}
