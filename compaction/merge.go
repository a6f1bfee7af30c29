package compaction

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
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
}

// MergeStats count what a merge kept and dropped.
type MergeStats struct {
	EntriesIn        int64
	EntriesOut       int64
	DroppedShadowed  int64 // older versions no snapshot can see
	DroppedTombstone int64 // deletions with nothing older below
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
func Merge(it base.InternalIterator, c *Compaction, v *manifest.Version, o *Options, smallestSnapshot uint64, sink Sink) (MergeStats, error) {
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
	)
	for ok := it.First(); ok; ok = it.Next() {
		ikey := it.Key()
		st.EntriesIn++
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
		case kind == base.KindDelete && seq <= smallestSnapshot && c.IsBaseLevelForKey(v, ukey):
			drop = true
			st.DroppedTombstone++
		}
		lastSeqForKey = seq
		if drop {
			continue
		}

		newUserKey := !haveOut || !bytes.Equal(ukey, lastOutKey)
		if newUserKey {
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
				if err := sink.Cut(); err != nil {
					return st, err
				}
				gpOverlap = 0
			}
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
	return st, sink.Cut()
}
