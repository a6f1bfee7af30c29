package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestPrefixFilterAgainstModel writes keys "u%03d:%03d" (prefix "u042:"
// under DelimitedPrefix(':'), "u042" under FixedPrefix(4)) with deletes
// and range deletions, reopening between rounds with another extractor
// (or none) so the tree mixes tables of several extractors; then every
// prefix-bounded scan, forward and backward, through snapshots too, must
// equal the model. Scans of absent prefixes must skip tables.
func TestPrefixFilterAgainstModel(t *testing.T) {
	extractors := []filter.Prefix{filter.DelimitedPrefix(':'), filter.FixedPrefix(4), nil}
	fs := vfs.NewMem()
	rng := rand.New(rand.NewSource(4))
	m := model{}
	var d *DB
	open := func(p filter.Prefix) {
		if d != nil {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		d = mustOpen(t, "/db", &Options{FS: fs, Prefix: p, WriteBufferSize: 16 << 10})
	}
	defer func() { d.Close() }()
	key := func(u, i int) string { return fmt.Sprintf("u%03d:%03d", u, i) }
	for round := 0; round < 6; round++ {
		ext := extractors[round%len(extractors)]
		open(ext)
		for op := 0; op < 1500; op++ {
			// Only even users exist: odd ones are absent prefixes inside
			// every table's key range.
			u, i := 2*rng.Intn(60), rng.Intn(40)
			switch r := rng.Intn(20); {
			case r < 15:
				v := fmt.Sprint(op, "-", round)
				if err := d.Put([]byte(key(u, i)), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[key(u, i)] = v
			case r < 19:
				if err := d.Delete([]byte(key(u, i)), nil); err != nil {
					t.Fatal(err)
				}
				delete(m, key(u, i))
			default:
				lo, hi := key(u, i), key(u, i+rng.Intn(10))
				if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
					t.Fatal(err)
				}
				m.deleteRange(lo, hi)
			}
		}
		snap := d.NewSnapshot()
		sm := m.clone()
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		for u := 0; u < 120; u++ {
			for _, p := range []string{fmt.Sprintf("u%03d:", u), fmt.Sprintf("u%03d", u)} {
				for _, useSnap := range []bool{false, true} {
					ro, want := &ReadOptions{}, m
					if useSnap {
						ro.Snapshot, want = snap, sm
					}
					ro.LowerBound, ro.UpperBound = PrefixBounds([]byte(p))
					checkPrefixScan(t, d, ro, want, p)
				}
			}
		}
		snap.Release()
	}
	// With the DelimitedPrefix extractor on a store whose tables all have
	// it, absent prefixes skip tables and read no block.
	open(filter.DelimitedPrefix(':'))
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := d.Metrics()
	for u := 1; u < 120; u += 2 {
		lo, hi := PrefixBounds([]byte(fmt.Sprintf("u%03d:", u)))
		it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
		if it.First() || it.Last() {
			t.Fatalf("absent prefix u%03d: found %q", u, it.Key())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	after := d.Metrics()
	pf := after.PrefixFilter
	checks, skipped := pf.Checks-before.PrefixFilter.Checks, pf.Useful-before.PrefixFilter.Useful
	blocks := after.DataBlocksRead - before.DataBlocksRead
	t.Logf("60 absent prefixes: %d prefix checks, %d tables skipped, %d data blocks read", checks, skipped, blocks)
	if checks == 0 || skipped < checks*9/10 {
		t.Errorf("absent prefixes: %d checks, %d skipped", checks, skipped)
	}
	if blocks > checks-skipped {
		t.Errorf("absent prefixes read %d data blocks, with %d tables let through", blocks, checks-skipped)
	}
}

// checkPrefixScan compares a bounded scan in both directions with the
// model's keys that start with p.
func checkPrefixScan(t *testing.T, d *DB, ro *ReadOptions, m model, p string) {
	t.Helper()
	var want []string
	for k := range m {
		if len(k) >= len(p) && k[:len(p)] == p {
			want = append(want, k)
		}
	}
	sort.Strings(want)
	it := d.NewIterator(ro)
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if string(it.Value()) != m[string(it.Key())] {
			t.Fatalf("prefix %q: %q = %q, want %q", p, it.Key(), it.Value(), m[string(it.Key())])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("prefix %q (snapshot %v): forward %v, want %v", p, ro.Snapshot != nil, got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("prefix %q: backward %v, want %v", p, got, want)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestScanPrefix checks filter.ScanPrefix's "is [lower, upper) inside
// one prefix" against brute force over a small key space.
func TestScanPrefix(t *testing.T) {
	alphabet := []byte{0, 'a', 'b', ':', 0xfe, 0xff}
	var keys [][]byte
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		keys = append(keys, bytes.Clone(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(bytes.Clone(prefix), c), n-1)
		}
	}
	gen(nil, 3)
	for _, ext := range []filter.Prefix{filter.FixedPrefix(1), filter.FixedPrefix(2), filter.DelimitedPrefix(':')} {
		for _, lo := range keys {
			for _, hi := range keys {
				if bytes.Compare(lo, hi) >= 0 {
					continue
				}
				q, ok := filter.ScanPrefix(ext, lo, hi)
				if !ok {
					continue
				}
				// Every key in [lo, hi) must have prefix q.
				for _, k := range keys {
					if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
						continue
					}
					n, in := ext.PrefixLen(k)
					if !in || !bytes.Equal(k[:n], q) {
						t.Fatalf("%s: ScanPrefix(%q, %q) = %q, but %q has prefix %q (in domain %v)", ext.Name(), lo, hi, q, k, k[:n], in)
					}
				}
			}
		}
		// PrefixBounds of a prefix is always inside it.
		for _, k := range keys {
			n, in := ext.PrefixLen(k)
			if !in {
				continue
			}
			lo, hi := PrefixBounds(k[:n])
			if hi == nil {
				continue
			}
			if q, ok := filter.ScanPrefix(ext, lo, hi); !ok || !bytes.Equal(q, k[:n]) {
				t.Fatalf("%s: PrefixBounds(%q) not recognised: %q %v", ext.Name(), k[:n], q, ok)
			}
		}
	}
	if _, err := Open("/x", &Options{FS: vfs.NewMem(), Prefix: badPrefix{}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("a Prefix with an empty name: %v", err)
	}
}

type badPrefix struct{}

func (badPrefix) Name() string                   { return "" }
func (badPrefix) PrefixLen(k []byte) (int, bool) { return 0, false }
