package db

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// exactRangePolicy is a range filter for tests: it stores every key and
// answers exactly, so the engine's use of range filters is tested apart
// from any filter's false positives.
type exactRangePolicy struct{}

func (exactRangePolicy) Name() string                    { return "test.ExactRange" }
func (exactRangePolicy) NewBuilder() filter.RangeBuilder { return &exactRangeBuilder{} }
func (exactRangePolicy) MayContainRange(f, lo, hi []byte) bool {
	for len(f) > 0 {
		n, k := binary.Uvarint(f)
		if k <= 0 || n > uint64(len(f)-k) {
			return true
		}
		key := f[k : k+int(n)]
		if bytes.Compare(lo, key) <= 0 && bytes.Compare(key, hi) < 0 {
			return true
		}
		f = f[k+int(n):]
	}
	return false
}

type exactRangeBuilder struct{ buf []byte }

func (b *exactRangeBuilder) AddKey(k []byte) {
	b.buf = binary.AppendUvarint(b.buf, uint64(len(k)))
	b.buf = append(b.buf, k...)
}

func (b *exactRangeBuilder) Finish(dst []byte) []byte {
	dst = append(dst, b.buf...)
	b.buf = b.buf[:0]
	return dst
}

// TestRangeFilterAgainstModel: bounded scans, forward and backward and
// through snapshots, equal the model with range filters on, on a store
// whose tables were written with and without them; short empty ranges
// inside the tables' key ranges skip every table that has one.
func TestRangeFilterAgainstModel(t *testing.T) {
	fs := vfs.NewMem()
	rng := rand.New(rand.NewSource(5))
	m := model{}
	var d *DB
	defer func() { d.Close() }()
	key := func(i int) string { return fmt.Sprintf("k%05d", i) }
	for round := 0; round < 4; round++ {
		if d != nil {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		o := &Options{FS: fs, WriteBufferSize: 16 << 10}
		if round%2 == 0 {
			o.RangeFilter = exactRangePolicy{}
		}
		d = mustOpen(t, "/db", o)
		for op := 0; op < 2000; op++ {
			i := 10 * rng.Intn(1000) // keys are multiples of 10: the gaps are empty ranges
			switch r := rng.Intn(10); {
			case r < 8:
				v := fmt.Sprint(op)
				if err := d.Put([]byte(key(i)), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[key(i)] = v
			case r < 9:
				if err := d.Delete([]byte(key(i)), nil); err != nil {
					t.Fatal(err)
				}
				delete(m, key(i))
			default:
				lo, hi := key(i), key(i+10*rng.Intn(5))
				if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
					t.Fatal(err)
				}
				m.deleteRange(lo, hi)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", &Options{FS: fs, RangeFilter: exactRangePolicy{}})
	snap := d.NewSnapshot()
	defer snap.Release()
	for q := 0; q < 400; q++ {
		lo := rng.Intn(10000)
		hi := lo + 1 + rng.Intn(60)
		ro := &ReadOptions{LowerBound: []byte(key(lo)), UpperBound: []byte(key(hi))}
		if q%2 == 0 {
			ro.Snapshot = snap
		}
		want := model{}
		for k, v := range m {
			if k >= key(lo) && k < key(hi) {
				want[k] = v
			}
		}
		got, err := scanState(d, ro)
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffStates(got, want); diff != "  (identical)" {
			t.Fatalf("[%s, %s): %s", key(lo), key(hi), diff)
		}
		it := d.NewIterator(ro)
		n := 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		if err := it.Close(); err != nil || n != len(want) {
			t.Fatalf("[%s, %s) backward: %d keys, want %d (%v)", key(lo), key(hi), n, len(want), err)
		}
	}
	// Empty ranges strictly between two keys: every table with a range
	// filter is skipped, and no block is read from those.
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := d.Metrics()
	for q := 0; q < 200; q++ {
		i := 10*rng.Intn(1000) + 1
		it := d.NewIterator(&ReadOptions{LowerBound: []byte(key(i)), UpperBound: []byte(key(i + 8))})
		if it.First() {
			t.Fatalf("empty range found %q", it.Key())
		}
		it.Close()
	}
	after := d.Metrics()
	rf := after.RangeFilter
	checks, skipped := rf.Checks-before.RangeFilter.Checks, rf.Useful-before.RangeFilter.Useful
	blocks := after.DataBlocksRead - before.DataBlocksRead
	t.Logf("200 empty ranges: %d range filter checks, %d tables skipped, %d data blocks read", checks, skipped, blocks)
	if checks == 0 || skipped != checks || blocks != 0 {
		t.Errorf("empty ranges: %d checks, %d skipped, %d blocks read", checks, skipped, blocks)
	}
}
