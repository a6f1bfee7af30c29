package compaction

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// Sink receives a compaction's output entries, in order, and owns the
// output tables.
type Sink interface {
	// Add appends an entry to the current output table, starting a new
	// table when none is open.
	Add(ikey, value []byte) error
	// CurrentSize is the estimated size of the open output table (0 when
	// none is open).
	CurrentSize() uint64
	// Cut finishes the open output table, if any.
	Cut() error
	// AddRangeDel adds a range tombstone to the current output table,
	// starting a new table when none is open.
	AddRangeDel(start, end []byte, seq uint64) error
}

// MergeStats count what a merge kept and dropped.
type MergeStats struct {
	EntriesIn        int64
	EntriesOut       int64
	DroppedShadowed  int64 // older versions no snapshot can see
	DroppedTombstone int64 // deletions with nothing older below
	DroppedCovered   int64 // entries a range tombstone deletes for every snapshot
	RangeDelsIn      int64 // range tombstones of the inputs
	RangeDelsOut     int64 // range tombstones written
	ZeroedSeqs       int64 // entries written with sequence number 0
}

// baseLevels answers IsBaseLevelForKey for a compaction's keys in
// ascending order, with one cursor per level below the output (LevelDB's
// level pointers): a merge asks for every key it writes, and a binary
// search of every lower level per key would cost more than the merge.
type baseLevels struct {
	v    *manifest.Version
	from int
	at   [NumLevels]int
}

// isBase reports whether no level below the output holds a table whose
// user-key range contains ukey. Calls must come in non-decreasing ukey
// order. A table's largest bound counts as inclusive even when it is a
// range tombstone's exclusive end, which can only answer false where true
// was right.
func (b *baseLevels) isBase(ukey []byte) bool {
	for l := b.from; l < NumLevels; l++ {
		files := b.v.Files[l]
		for b.at[l] < len(files) {
			f := files[b.at[l]]
			if bytes.Compare(ukey, base.UserKey(f.Largest)) <= 0 {
				if bytes.Compare(ukey, base.UserKey(f.Smallest)) >= 0 {
					return false
				}
				break
			}
			b.at[l]++
		}
	}
	return true
}

// IsBaseLevelForRange reports whether no level below the compaction's
// output can hold a key in [start, end), so a range tombstone over it has
// nothing left to delete once the compaction's own inputs are merged.
func (c *Compaction) IsBaseLevelForRange(v *manifest.Version, start, end []byte) bool {
	for l := c.OutputLevel() + 1; l < NumLevels; l++ {
		// Overlaps takes an inclusive end: at worst the tombstone is kept
		// for a table that starts exactly at end.
		if len(v.Overlaps(l, start, end)) > 0 {
			return false
		}
	}
	return true
}

// outputRangeDels returns the inputs' tombstones the output must keep, in
// canonical order: all of them except those every snapshot sees (Seq at
// most smallestSnapshot) over a range no level below the output can hold
// a key of, which have nothing left to delete once this compaction drops
// what they cover. The set has joined the pieces earlier compactions cut
// each tombstone into (rangedel.Build), and the tombstones are not
// fragmented against each other: n overlapping ones are n in each output
// they reach.
func outputRangeDels(rd *rangedel.Set, c *Compaction, v *manifest.Version, smallestSnapshot uint64) []rangedel.Tombstone {
	var out []rangedel.Tombstone
	for _, t := range rd.Tombstones() {
		if t.Seq <= smallestSnapshot && c.IsBaseLevelForRange(v, t.Start, t.End) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Merge reads the merged inputs of c from it and writes what must survive
// to sink: for each user key, the newest entry, plus every older entry a
// live snapshot can still see; a deletion is dropped too once no snapshot
// needs it and no level below the output can hold the key. smallestSnapshot
// is the sequence number of the oldest live snapshot (or the newest
// sequence number when there is none). Outputs are cut at
// opts.TargetFileSize, or when they would overlap too much of the
// grandparent level, but never between two versions of one user key, so
// the tables of a level never share a user key.
//
// rangeDels holds the range tombstones of the inputs. An entry one of them
// deletes for every snapshot (its sequence number is at most
// smallestSnapshot) is dropped; the tombstones themselves are written to
// the outputs, each in the tables whose key ranges hold it, except those
// outputRangeDels finds needless. An output may be cut inside a
// tombstone: after the output's last user key t, the tombstone is split at
// t+"\x00", the first piece staying in the output (whose largest bound
// is then t, rangedel.BoundEnd) and the rest going on to the next, which
// starts at t+"\x00". So the tables of a level stay disjoint in user keys,
// and a wide tombstone kept for a snapshot does not glue its level into
// one table.
//
// A value every snapshot sees (its sequence number is at most
// smallestSnapshot, so every older version of its key was dropped) is
// written with sequence number 0 when no level below the output holds its
// key and no tombstone of the inputs covers it, as RocksDB and Pebble do
// at their bottom level: a trailer of seven zero bytes compresses, so the
// tables shrink. Nothing can tell the difference. Readers at any sequence
// number that could see the entry still see it; no older version of the
// key remains for it to hide or to be ordered against; and every range
// tombstone that could cover it lies in a level above (newer, by the
// level invariant, than the entry was) or among the inputs, where any
// covering tombstone, older or newer, keeps the number as it was, because
// an older tombstone would cover the entry once its number was 0.
func Merge(it base.InternalIterator, rangeDels *rangedel.Set, c *Compaction, v *manifest.Version, o *Options, smallestSnapshot uint64, sink Sink) (MergeStats, error) {
	var (
		st             MergeStats
		curKey         []byte // user key of the entries being read
		haveCur        bool
		lastSeqForKey  uint64
		lastOutKey     []byte // user key of the last entry written
		haveOut        bool
		gpIndex        int
		gpOverlap      uint64
		seenGrandchild bool

		tombs    = outputRangeDels(rangeDels, c, v, smallestSnapshot)
		nextTomb int                  // first tombstone not yet taken
		open     []rangedel.Tombstone // tombstones (or their rest) of the open output, not yet written
		split    []byte               // lastOutKey+"\x00" at a cut
		below    = baseLevels{v: v, from: c.OutputLevel() + 1}
		zeroKey  []byte // the entry being written, with sequence number 0
	)
	st.RangeDelsIn = int64(rangeDels.Len())
	// takeTombs adds the tombstones that start before limit (all of them
	// when limit is nil) to the open output's.
	takeTombs := func(limit []byte) {
		for ; nextTomb < len(tombs) && (limit == nil || bytes.Compare(tombs[nextTomb].Start, limit) < 0); nextTomb++ {
			open = append(open, tombs[nextTomb])
		}
	}
	// writeOpen writes the open output's tombstones, cut at end when end is
	// not nil, and keeps for the next output what lies at or after end.
	writeOpen := func(end []byte) error {
		rest := open[:0]
		for _, t := range open {
			if end != nil && bytes.Compare(t.Start, end) >= 0 {
				rest = append(rest, t) // wholly the next output's
				continue
			}
			piece := t
			if end != nil && bytes.Compare(t.End, end) > 0 {
				piece.End = end
				rest = append(rest, rangedel.Tombstone{Start: bytes.Clone(end), End: t.End, Seq: t.Seq})
			}
			if err := sink.AddRangeDel(piece.Start, piece.End, piece.Seq); err != nil {
				return err
			}
			st.RangeDelsOut++
		}
		open = rest
		return nil
	}
	// coveredSeq returns the newest tombstone sequence number at most
	// smallestSnapshot that covers ukey (0 when none).
	coveredSeq := func(ukey []byte) uint64 {
		if rangeDels.Len() == 0 {
			return 0
		}
		q, _ := rangeDels.MaxSeq(ukey, smallestSnapshot)
		return q
	}
	for ok := it.First(); ok; ok = it.Next() {
		ikey := it.Key()
		st.EntriesIn++
		if st.EntriesIn%base.YieldEvery == 0 {
			runtime.Gosched() // see base.YieldEvery
		}
		ukey, seq, kind, valid := base.ParseInternalKey(ikey)
		if !valid {
			return st, base.CorruptionErrorf("compaction input holds a malformed internal key %q", ikey)
		}
		if !haveCur || !bytes.Equal(ukey, curKey) {
			curKey = append(curKey[:0], ukey...)
			haveCur = true
			lastSeqForKey = base.MaxSeqNum + 1
		}
		drop := false
		switch {
		case lastSeqForKey <= smallestSnapshot:
			// A newer entry of this key is visible to every snapshot.
			drop = true
			st.DroppedShadowed++
		case kind == base.KindDelete && seq <= smallestSnapshot && below.isBase(ukey):
			drop = true
			st.DroppedTombstone++
		case seq < coveredSeq(ukey):
			drop = true
			st.DroppedCovered++
		}
		lastSeqForKey = seq
		if drop {
			continue
		}

		newUserKey := !haveOut || !bytes.Equal(ukey, lastOutKey)
		if newUserKey {
			// Tombstones starting before this key belong with the keys
			// before it (all but their rest past a cut below).
			takeTombs(ukey)
			// Advance through the grandparents this key has passed.
			for gpIndex < len(c.Grandparents) && base.CompareInternal(ikey, c.Grandparents[gpIndex].Largest) > 0 {
				if seenGrandchild {
					gpOverlap += c.Grandparents[gpIndex].Size
				}
				gpIndex++
			}
			seenGrandchild = true
			size := sink.CurrentSize()
			if size > 0 && (size >= o.TargetFileSize || gpOverlap > o.maxGrandparentOverlap()) {
				// The output ends with user key lastOutKey: its tombstones
				// end by lastOutKey+"\x00", the next output's begin there.
				split = append(append(split[:0], lastOutKey...), 0)
				if err := writeOpen(split); err != nil {
					return st, err
				}
				if err := sink.Cut(); err != nil {
					return st, err
				}
				gpOverlap = 0
			}
		}
		if kind == base.KindSet && seq > 0 && seq <= smallestSnapshot && below.isBase(ukey) &&
			(rangeDels.Len() == 0 || !coversAny(rangeDels, ukey)) {
			zeroKey = append(zeroKey[:0], ikey...)
			binary.LittleEndian.PutUint64(zeroKey[len(zeroKey)-base.TrailerLen:], base.MakeTrailer(0, kind))
			ikey = zeroKey
			st.ZeroedSeqs++
		}
		if err := sink.Add(ikey, it.Value()); err != nil {
			return st, err
		}
		st.EntriesOut++
		if newUserKey {
			lastOutKey = append(lastOutKey[:0], ukey...)
			haveOut = true
		}
	}
	if err := it.Error(); err != nil {
		return st, fmt.Errorf("reading compaction inputs: %w", err)
	}
	takeTombs(nil)
	if err := writeOpen(nil); err != nil {
		return st, err
	}
	return st, sink.Cut()
}

// coversAny reports whether any tombstone of rd, at any sequence number,
// covers ukey.
func coversAny(rd *rangedel.Set, ukey []byte) bool {
	_, ok := rd.MaxSeq(ukey, base.MaxSeqNum)
	return ok
}
