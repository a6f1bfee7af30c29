package db

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/memtable"
)

// TestMultiGetMemTablesMixedFilters calls memTables on a read state whose
// mutable memtable has a filter and whose immutable one has none (a DB
// never makes both kinds at once, but memTables takes each memtable as it
// is): every key of either memtable is answered from it, newest first, a
// key of neither is left pending, and the filter counts are those of the
// filtered memtable alone, as Get counts them.
func TestMultiGetMemTablesMixedFilters(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{})
	defer d.Close()
	mem, imm := memtable.NewWithFilter(1<<16), memtable.New()
	for i := 0; i < 300; i++ {
		switch i % 3 {
		case 0:
			mem.Add(uint64(1000+i), base.KindSet, []byte(fmt.Sprintf("k%04d", i)), []byte("mem"))
		case 1:
			imm.Add(uint64(i+1), base.KindSet, []byte(fmt.Sprintf("k%04d", i)), []byte("imm"))
		}
	}
	// A key in both: the mutable memtable's newer value answers.
	imm.Add(1, base.KindSet, []byte("k0000"), []byte("old"))
	for _, swap := range []bool{false, true} {
		rs := &readState{d: d, mem: mem, imm: imm}
		want := map[int]string{}
		for i := 0; i < 300; i++ {
			switch i % 3 {
			case 0:
				want[i] = "mem"
			case 1:
				want[i] = "imm"
			}
		}
		if swap {
			// The unfiltered memtable mutable, the filtered one immutable
			// (its keys are older now in sequence but hold other keys).
			rs.mem, rs.imm = imm, mem
			want[0] = "old"
		}
		keys := make([][]byte, 300)
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("k%04d", i))
		}
		values, errs := make([][]byte, len(keys)), make([]error, len(keys))
		sc := new(mgScratch)
		mg := &sc.mg
		*mg = multiGet{d: d, keys: keys, values: values, errs: errs, seq: base.MaxSeqNum, sc: sc}
		before := d.Metrics()
		pending := mg.memTables(rs, nil)
		after := d.Metrics()
		left := map[int]bool{}
		for _, i := range pending {
			left[i] = true
		}
		for i := range keys {
			w, ok := want[i]
			switch {
			case ok && (left[i] || errs[i] != nil || string(values[i]) != w):
				t.Fatalf("swap %v, key %d: pending %v, %q, %v; want %q", swap, i, left[i], values[i], errs[i], w)
			case !ok && !left[i]:
				t.Fatalf("swap %v, key %d of neither memtable answered: %q, %v", swap, i, values[i], errs[i])
			}
		}
		// Get asks the filtered memtable about every key the memtable
		// before it did not answer: all 300, or the 199 the unfiltered
		// one does not hold; it finds 100, or 99 (k0000 answered first).
		checks, truePos := int64(300), int64(100)
		if swap {
			checks, truePos = 199, 99
		}
		c := after.MemTableFilter.Checks - before.MemTableFilter.Checks
		tp := after.MemTableFilter.TruePositives - before.MemTableFilter.TruePositives
		if c != checks || tp != truePos {
			t.Fatalf("swap %v: %d checks, %d true positives; want %d, %d", swap, c, tp, checks, truePos)
		}
		if errors.Is(errs[2], ErrNotFound) {
			t.Fatal("memTables answered a pending key")
		}
	}
}
