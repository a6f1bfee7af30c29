package db

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

var rangeDelKeys = flag.Int("rangedel_keys", 100_000, "keys TestDeleteRangeReclaimsSpace writes (the issue's figure: 1000000)")

// tableRangeDels sums the range tombstones of the tables in the tree.
func tableRangeDels(d *DB) (n uint64) {
	ref := d.loadReadState()
	defer ref.unref()
	for _, files := range ref.rs.v.Files {
		for _, f := range files {
			n += f.RangeDels
		}
	}
	return n
}

func rkey(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

// TestDeleteRangeReads checks every read against one tombstone at each
// stage of its life: in the memtable, after a reopen (replayed from the
// WAL), in a level-0 table above the data, and compacted down together
// with it; through Get, MultiGet, both iterator directions, Seek, and a
// snapshot taken before it; and keys written after it.
func TestDeleteRangeReads(t *testing.T) {
	for _, stage := range []string{"memtable", "replayed", "flushed", "compacted"} {
		t.Run(stage, func(t *testing.T) {
			fs := vfs.NewMem()
			o := &Options{FS: fs, DisableAutomaticCompactions: true}
			d := mustOpen(t, "/db", o)
			defer func() { d.Close() }()
			for i := 0; i < 100; i++ {
				if err := d.Put(rkey(i), []byte(fmt.Sprint("v", i)), nil); err != nil {
					t.Fatal(err)
				}
			}
			// The data in a table below, whose filter says "may contain"
			// for every key it holds.
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			snap := d.NewSnapshot()
			defer snap.Release()
			if err := d.DeleteRange(rkey(20), rkey(80), nil); err != nil {
				t.Fatal(err)
			}
			// Written after the tombstone: visible again.
			if err := d.Put(rkey(50), []byte("new50"), nil); err != nil {
				t.Fatal(err)
			}
			switch stage {
			case "replayed":
				snap.Release()
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				d = mustOpen(t, "/db", o)
			case "flushed":
				if m := d.Metrics(); m.MemTableRangeTombstones != 1 || m.RangeTombstones != 0 {
					t.Fatalf("before the flush: metrics count %d tombstones in memtables, %d in tables", m.MemTableRangeTombstones, m.RangeTombstones)
				}
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				if m := d.Metrics(); tableRangeDels(d) != 1 || m.RangeTombstones != 1 || !strings.Contains(m.String(), "range tombstones: 1 in tables") {
					t.Fatalf("after the flush the tables hold %d tombstones, want 1; metrics:\n%s", tableRangeDels(d), m)
				}
			case "compacted":
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]string{}
			for i := 0; i < 100; i++ {
				if i < 20 || i >= 80 {
					want[string(rkey(i))] = fmt.Sprint("v", i)
				}
			}
			want[string(rkey(50))] = "new50"
			checkState(t, d, nil, want)
			if stage != "replayed" {
				// The snapshot predates the tombstone: it sees every key.
				old := map[string]string{}
				for i := 0; i < 100; i++ {
					old[string(rkey(i))] = fmt.Sprint("v", i)
				}
				checkState(t, d, &ReadOptions{Snapshot: snap}, old)
			}
		})
	}
}

// checkState compares Get, MultiGet, forward and backward scans and a Seek
// into every gap with want.
func checkState(t *testing.T, d *DB, ro *ReadOptions, want map[string]string) {
	t.Helper()
	var keys [][]byte
	for i := 0; i < 100; i++ {
		keys = append(keys, rkey(i))
	}
	vals, errs := d.MultiGet(keys, ro)
	for i, k := range keys {
		v, err := d.Get(k, ro)
		w, ok := want[string(k)]
		if ok && (err != nil || string(v) != w) || !ok && !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) = %q, %v; want %q (present %v)", k, v, err, w, ok)
		}
		if ok && (errs[i] != nil || string(vals[i]) != w) || !ok && !errors.Is(errs[i], ErrNotFound) {
			t.Errorf("MultiGet(%s) = %q, %v; want %q (present %v)", k, vals[i], errs[i], w, ok)
		}
	}
	got, err := scanState(d, ro)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffStates(got, want); diff != "  (identical)" {
		t.Errorf("forward scan: %s", diff)
	}
	it := d.NewIterator(ro)
	defer it.Close()
	back := map[string]string{}
	var prev []byte
	for ok := it.Last(); ok; ok = it.Prev() {
		if prev != nil && bytes.Compare(it.Key(), prev) >= 0 {
			t.Fatalf("backward scan out of order at %q", it.Key())
		}
		prev = append(prev[:0], it.Key()...)
		back[string(it.Key())] = string(it.Value())
	}
	if diff := diffStates(back, want); diff != "  (identical)" {
		t.Errorf("backward scan: %s", diff)
	}
	for i := 0; i <= 100; i++ {
		// The first live key at or after rkey(i).
		var next string
		for j := i; j < 100; j++ {
			if _, ok := want[string(rkey(j))]; ok {
				next = string(rkey(j))
				break
			}
		}
		ok := it.Seek(rkey(i))
		if (next != "") != ok || ok && string(it.Key()) != next {
			t.Errorf("Seek(%s) = %v at %q, want %q", rkey(i), ok, it.Key(), next)
		}
		if ok && i > 0 {
			// One step back lands on the last live key before it.
			var before string
			for j := i - 1; j >= 0; j-- {
				if _, ok := want[string(rkey(j))]; ok && string(rkey(j)) < next {
					before = string(rkey(j))
					break
				}
			}
			ok := it.Prev()
			if (before != "") != ok || ok && string(it.Key()) != before {
				t.Errorf("Seek(%s) then Prev = %v at %q, want %q", rkey(i), ok, it.Key(), before)
			}
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteRangeArguments: an empty range is a no-op, an inverted one is
// refused whole (also inside a batch), and the size limits apply to both
// ends.
func TestDeleteRangeArguments(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	if err := d.Put([]byte("b"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("b"), []byte("b"), nil); err != nil {
		t.Fatalf("empty range: %v", err)
	}
	if err := d.DeleteRange([]byte("c"), []byte("a"), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("inverted range: %v, want ErrInvalidArgument", err)
	}
	var b Batch
	b.Put([]byte("x"), []byte("1"))
	b.DeleteRange([]byte("z"), []byte("a"))
	if err := d.Write(&b, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("batch with an inverted range: %v, want ErrInvalidArgument", err)
	}
	mustMiss(t, d, "x")
	mustGet(t, d, "b", "1")
	big := bytes.Repeat([]byte("k"), MaxKeySize+1)
	if err := d.DeleteRange([]byte("a"), big, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("end over MaxKeySize: %v", err)
	}
	if err := d.DeleteRange(big[:MaxKeySize], big, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("end over MaxKeySize (start at it): %v", err)
	}
	// Exactly at the limit: accepted, and the store reopens.
	if err := d.DeleteRange([]byte("a"), big[:MaxKeySize], nil); err != nil {
		t.Fatalf("end of MaxKeySize bytes: %v", err)
	}
	mustMiss(t, d, "b")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("a"), []byte("b"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestDeleteRangeReclaimsSpace is the measure: write the keys,
// delete 90% of the key space with one DeleteRange, CompactRange; the
// store must shrink to at most 15% of its size, and the tombstone must be
// gone (nothing below it is left to delete).
func TestDeleteRangeReclaimsSpace(t *testing.T) {
	n := *rangeDelKeys
	if testing.Short() {
		n = 20_000
	}
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs})
	defer d.Close()
	val := bytes.Repeat([]byte("v"), 100)
	var b Batch
	for i := 0; i < n; i++ {
		// Values vary, or snappy would shrink them to nothing.
		copy(val, fmt.Sprintf("%08d", i*7919))
		b.Put(rkey(i), val)
		if b.Count() == 1000 {
			if err := d.Write(&b, nil); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	size := func() uint64 {
		var s uint64
		for _, l := range d.Metrics().Levels {
			s += l.Bytes
		}
		return s
	}
	before := size()
	lo, hi := n/20, n/20+n*9/10
	if err := d.DeleteRange(rkey(lo), rkey(hi), nil); err != nil {
		t.Fatal(err)
	}
	// Absent keys outside the tombstone still read no data block.
	blocks := d.Metrics().DataBlocksRead
	for i := 0; i < 1000; i++ {
		if _, err := d.Get([]byte(fmt.Sprintf("key%06d!", i*(n/1000))), nil); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	after := size()
	t.Logf("%d keys: %d bytes before, %d after deleting 90%% (%.1f%%); %d data blocks read by 1000 absent Gets",
		n, before, after, 100*float64(after)/float64(before), d.Metrics().DataBlocksRead-blocks)
	if float64(after) > 0.15*float64(before) {
		t.Errorf("store is %d bytes after the DeleteRange and CompactRange, over 15%% of %d", after, before)
	}
	if got := tableRangeDels(d); got != 0 {
		t.Errorf("%d range tombstones left after a full compaction with nothing below", got)
	}
	if m := d.Metrics(); m.RangeTombstones != 0 || m.CoveredEntriesDropped < int64(hi-lo) {
		t.Errorf("metrics: %d tombstones, %d covered entries dropped (deleted %d)", m.RangeTombstones, m.CoveredEntriesDropped, hi-lo)
	}
	for _, i := range []int{0, lo - 1, lo, hi - 1, hi, n - 1} {
		_, err := d.Get(rkey(i), nil)
		if deleted := i >= lo && i < hi; deleted != errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) after compaction: %v (deleted %v)", rkey(i), err, deleted)
		}
	}
}

// TestDeleteRangeAbsentGetReadsNoBlock: with tombstones elsewhere in the
// store (memtable and tables), a Get of an absent key outside them is
// answered by the filters alone.
func TestDeleteRangeAbsentGetReadsNoBlock(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	defer d.Close()
	for i := 0; i < 5000; i++ {
		if err := d.Put(rkey(i), []byte("value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteRange(rkey(100), rkey(200), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange(rkey(300), rkey(400), nil); err != nil {
		t.Fatal(err)
	}
	before := d.Metrics()
	for i := 0; i < 5000; i++ {
		if _, err := d.Get([]byte(fmt.Sprintf("absent%06d", i)), nil); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	after := d.Metrics()
	positives := after.Filter.Positives - before.Filter.Positives
	if blocks := after.DataBlocksRead - before.DataBlocksRead; blocks > positives {
		t.Errorf("5000 absent Gets read %d data blocks; the filters let %d through", blocks, positives)
	}
	if positives > 150 { // 10 bits/key: about 1% of 5000 probes
		t.Errorf("%d filter positives for 5000 absent keys", positives)
	}
	// And a covered key in the table below is not found, though its
	// filter says "may contain".
	mustMiss(t, d, string(rkey(150)))
	mustMiss(t, d, string(rkey(350)))
	mustGet(t, d, string(rkey(200)), "value")
}

// TestEmptySyncedWriteIsABarrier: an empty batch (or an empty
// DeleteRange) written with Sync syncs the log, so the unsynced writes
// before it survive a machine crash, as in LevelDB.
func TestEmptySyncedWriteIsABarrier(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs})
	for i := 0; i < 10; i++ {
		if err := d.Put(rkey(i), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	syncs := d.Metrics().WALSyncs
	if err := d.DeleteRange(rkey(3), rkey(3), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if got := d.Metrics().WALSyncs; got != syncs+1 {
		t.Fatalf("an empty synced write made %d log syncs, want 1", got-syncs)
	}
	crashed := fs.CrashCloneWith(vfs.CrashOptions{UnsyncedData: vfs.SurviveNone, UnsyncedDirOps: vfs.SurviveNone})
	d.Close()
	c := mustOpen(t, "/db", &Options{FS: crashed})
	defer c.Close()
	for i := 0; i < 10; i++ {
		mustGet(t, c, string(rkey(i)), "v")
	}
}
