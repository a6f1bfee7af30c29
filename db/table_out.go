package db

import (
	"runtime"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// tableOut writes one new table, for a flush or a compaction, tracking the
// metadata the MANIFEST records for it.
type tableOut struct {
	d    *DB
	name string
	f    vfs.File
	w    *sstable.Writer
	meta *manifest.FileMetadata
}

// newTableOut creates table file num for level, with that level's filter
// policy.
func (d *DB) newTableOut(num uint64, level int) (*tableOut, error) {
	name := d.newTablePath(num)
	f, err := d.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &tableOut{
		d:    d,
		name: name,
		f:    f,
		w:    sstable.NewWriter(f, d.writerOptions(level)),
		meta: &manifest.FileMetadata{FileNum: num, SmallestSeq: base.MaxSeqNum},
	}, nil
}

func (t *tableOut) add(ikey, value []byte) error {
	if err := t.w.Add(ikey, value); err != nil {
		return err
	}
	// The writer refuses keys out of order, so its first and last keys
	// bound the point entries: finish widens the bounds once from them.
	// Only the sequence bounds are kept per entry.
	seq := base.Trailer(ikey) >> 8
	t.meta.SmallestSeq = min(t.meta.SmallestSeq, seq)
	t.meta.LargestSeq = max(t.meta.LargestSeq, seq)
	return nil
}

// addRangeDel adds a range tombstone to the table.
func (t *tableOut) addRangeDel(start, end []byte, seq uint64) error {
	if err := t.w.AddRangeDel(start, end, seq); err != nil {
		return err
	}
	widenRangeDelBounds(t.meta, start, end, seq)
	return nil
}

// widenBounds widens m's key and sequence bounds to hold [lo, hi] and seq.
func widenBounds(m *manifest.FileMetadata, lo, hi []byte, seq uint64) {
	if m.Smallest == nil || base.CompareInternal(lo, m.Smallest) < 0 {
		m.Smallest = append(m.Smallest[:0], lo...)
	}
	if m.Largest == nil || base.CompareInternal(hi, m.Largest) > 0 {
		m.Largest = append(m.Largest[:0], hi...)
	}
	m.SmallestSeq = min(m.SmallestSeq, seq)
	m.LargestSeq = max(m.LargestSeq, seq)
}

// widenRangeDelBounds widens m's bounds to cover the tombstone [start,
// end)#seq: from start#seq to rangedel.BoundEnd(end)#seq, both of kind
// KindRangeDelete. For an end not ending in a zero byte the table claims
// one user key it may not hold; compaction never starts the next table of
// a level at that key (it cuts a tombstone at t+"\x00", whose bound is t).
func widenRangeDelBounds(m *manifest.FileMetadata, start, end []byte, seq uint64) {
	var lo, hi [64]byte
	widenBounds(m, base.AppendInternalKey(lo[:0], start, seq, base.KindRangeDelete),
		base.AppendInternalKey(hi[:0], rangedel.BoundEnd(end), seq, base.KindRangeDelete), seq)
	m.RangeDels++
}

func (t *tableOut) estimatedSize() uint64 { return t.w.EstimatedSize() }

// finish completes, syncs and closes the table and opens it in the table
// cache, so its filter is resident before any reader can see the table.
// On error the file is removed.
func (t *tableOut) finish() (*manifest.FileMetadata, error) {
	props, err := t.w.Finish()
	if err == nil && props.Smallest != nil {
		widenBounds(t.meta, props.Smallest, props.Largest, t.meta.SmallestSeq)
	}
	if err == nil {
		err = t.f.Sync()
	}
	var size int64
	if err == nil {
		size, err = t.f.Size()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		t.meta.Size = uint64(size)
		_, err = t.d.tables.get(t.meta)
	}
	if err != nil {
		t.d.tables.evict(t.meta.FileNum)
		_ = t.d.fs.Remove(t.name)
		return nil, err
	}
	return t.meta, nil
}

// abandon closes and removes an unfinished table.
func (t *tableOut) abandon() {
	t.f.Close()
	_ = t.d.fs.Remove(t.name)
}

// writeTable writes every entry of it, and the range tombstones rd, to new
// table num at level.
func (d *DB) writeTable(num uint64, level int, it base.InternalIterator, rd []rangedel.Tombstone) (*manifest.FileMetadata, error) {
	t, err := d.newTableOut(num, level)
	if err != nil {
		it.Close()
		return nil, err
	}
	for _, r := range rd {
		if err := t.addRangeDel(r.Start, r.End, r.Seq); err != nil {
			it.Close()
			t.abandon()
			return nil, err
		}
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := t.add(it.Key(), it.Value()); err != nil {
			it.Close()
			t.abandon()
			return nil, err
		}
		if n++; n%base.YieldEvery == 0 {
			runtime.Gosched() // see base.YieldEvery
		}
	}
	if err := it.Close(); err != nil {
		t.abandon()
		return nil, err
	}
	return t.finish()
}
