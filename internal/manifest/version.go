package manifest

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
)

// FileMetadata describes one table. It is immutable once it is part of a
// Version and is shared by every Version that holds the table.
type FileMetadata struct {
	FileNum uint64
	Size    uint64 // bytes
	// Smallest and Largest are the table's first and last internal keys
	// (base.CompareInternal order).
	Smallest, Largest []byte
	// SmallestSeq and LargestSeq bound the sequence numbers of the table's
	// entries.
	SmallestSeq, LargestSeq uint64
	// RangeDels is the number of range tombstones in the table's
	// range-deletion block (0: none). A table with tombstones has bounds
	// that cover them: Smallest may be a tombstone's start and Largest a
	// tombstone's end (kind base.KindRangeDelete), which the tombstone
	// excludes, so the table claims one user key more than it holds.
	RangeDels uint64
	// SeqsUnknown is set for a table recorded in LevelDB's encoding (tag
	// 7), which carries no sequence numbers: SmallestSeq is then 0 and
	// LargestSeq base.MaxSeqNum, bounds that hold for any table, and level
	// 0 orders the table by its file number (see the package
	// documentation).
	SeqsUnknown bool

	// opened is the db package's table cache entry for the table, once
	// opened (SetOpened), so that a read reaches the open table without a
	// map lookup. It is not part of the table's description: not encoded,
	// compared or copied by the edits.
	opened atomic.Value
}

// Opened returns what SetOpened stored (nil before).
func (m *FileMetadata) Opened() any { return m.opened.Load() }

// SetOpened records the table cache's entry for the table; v must not be
// nil and must be of one type for every call.
func (m *FileMetadata) SetOpened(v any) { m.opened.Store(v) }

// UnknownSeqs marks m as a table whose sequence numbers are not recorded
// (LevelDB's MANIFEST encoding): SeqsUnknown, SmallestSeq 0, LargestSeq
// base.MaxSeqNum.
func (m *FileMetadata) UnknownSeqs() {
	m.SeqsUnknown = true
	m.SmallestSeq, m.LargestSeq = 0, base.MaxSeqNum
}

// check reports whether m meets the invariants in the package documentation.
func (m *FileMetadata) check() error {
	_, sseq, _, ok := base.ParseBoundKey(m.Smallest)
	if !ok {
		return fmt.Errorf("smallest key %q is not an internal key", m.Smallest)
	}
	_, lseq, _, ok := base.ParseBoundKey(m.Largest)
	if !ok {
		return fmt.Errorf("largest key %q is not an internal key", m.Largest)
	}
	if base.CompareInternal(m.Smallest, m.Largest) > 0 {
		return fmt.Errorf("smallest key %s > largest key %s",
			base.FormatInternalKey(m.Smallest), base.FormatInternalKey(m.Largest))
	}
	if m.SeqsUnknown && (m.SmallestSeq != 0 || m.LargestSeq != base.MaxSeqNum) {
		return fmt.Errorf("sequence range [%d,%d] recorded for a table whose sequence numbers are unknown", m.SmallestSeq, m.LargestSeq)
	}
	if m.SmallestSeq > m.LargestSeq || m.LargestSeq > base.MaxSeqNum {
		return fmt.Errorf("bad sequence range [%d,%d]", m.SmallestSeq, m.LargestSeq)
	}
	for _, s := range [2]uint64{sseq, lseq} {
		if s < m.SmallestSeq || s > m.LargestSeq {
			return fmt.Errorf("boundary key seq %d outside the sequence range [%d,%d]",
				s, m.SmallestSeq, m.LargestSeq)
		}
	}
	return nil
}

// smallestUkey and largestUkey return the user keys of the table's bounds.
func (m *FileMetadata) smallestUkey() []byte { return base.UserKey(m.Smallest) }
func (m *FileMetadata) largestUkey() []byte  { return base.UserKey(m.Largest) }

// String renders m as "num size [smallest .. largest] seqs=[s,l]" (or
// seqs=unknown).
func (m *FileMetadata) String() string {
	seqs := fmt.Sprintf("[%d,%d]", m.SmallestSeq, m.LargestSeq)
	if m.SeqsUnknown {
		seqs = "unknown"
	}
	s := fmt.Sprintf("%06d size=%d [%s .. %s] seqs=%s", m.FileNum, m.Size,
		base.FormatInternalKey(m.Smallest), base.FormatInternalKey(m.Largest), seqs)
	if m.RangeDels > 0 {
		s += fmt.Sprintf(" rangedels=%d", m.RangeDels)
	}
	return s
}

// Version is the set of live tables, per level, at one point in the
// database's history. The zero Version is empty. A Version built by a
// Builder obeys the ordering rules in the package documentation and must not
// be modified.
type Version struct {
	Files [NumLevels][]*FileMetadata
	// SharedBoundaries[level] is set when two adjacent tables of the level
	// (>= 1) share a boundary user key: the versions of that key are split
	// between them, newer ones in the first. LevelDB and goleveldb can
	// write such levels (when a snapshot keeps several versions of a key
	// through a compaction that cuts its output there); bloomkv never
	// does, but reads and compacts them (FindFiles, and compaction inputs
	// that take both tables).
	SharedBoundaries [NumLevels]bool
	// index[level] speeds up the searches of a sorted level (levelIndex);
	// Finish builds it. Without it (a Version made otherwise) they compare
	// whole keys.
	index [NumLevels]*levelIndex
}

// NumFiles returns the number of tables in level.
func (v *Version) NumFiles(level int) int { return len(v.Files[level]) }

// LevelBytes returns the total size of the tables in level.
func (v *Version) LevelBytes(level int) uint64 {
	var n uint64
	for _, f := range v.Files[level] {
		n += f.Size
	}
	return n
}

// AllFileNums returns the file numbers of every table in v, ascending.
func (v *Version) AllFileNums() []uint64 {
	var nums []uint64
	for _, files := range v.Files {
		for _, f := range files {
			nums = append(nums, f.FileNum)
		}
	}
	slices.Sort(nums)
	return nums
}

// Overlaps returns the tables of level whose user-key range intersects
// [smallestUkey, largestUkey], in the level's order. A nil smallestUkey means
// no lower bound and a nil largestUkey means no upper bound (a non-nil empty
// largestUkey is the empty user key). It returns nil when no table overlaps.
//
// Overlaps does not widen the range by the tables it finds; a compaction
// picker that needs LevelDB's transitive L0 expansion calls it again with
// the widened range.
func (v *Version) Overlaps(level int, smallestUkey, largestUkey []byte) []*FileMetadata {
	files := v.Files[level]
	below := func(f *FileMetadata) bool { // f ends before the range
		return smallestUkey != nil && bytes.Compare(f.largestUkey(), smallestUkey) < 0
	}
	above := func(f *FileMetadata) bool { // f starts after the range
		return largestUkey != nil && bytes.Compare(f.smallestUkey(), largestUkey) > 0
	}
	var out []*FileMetadata
	if level == 0 {
		for _, f := range files {
			if !below(f) && !above(f) {
				out = append(out, f)
			}
		}
		return out
	}
	// Levels >= 1 are sorted and disjoint, so the overlapping tables are a
	// contiguous run starting at the first table not below the range.
	i := sort.Search(len(files), func(i int) bool { return !below(files[i]) })
	for ; i < len(files) && !above(files[i]); i++ {
		out = append(out, files[i])
	}
	return out
}

// FindFile returns the first table of level that may hold ukey, or nil
// when ukey is outside every table's range. level must be in [1,
// NumLevels): L0 tables may overlap, so use Overlaps(0, ukey, ukey) there.
// On a level with SharedBoundaries, ukey's older versions may be in the
// tables after it: readers use FindFiles.
func (v *Version) FindFile(level int, ukey []byte) *FileMetadata {
	if files := v.FindFiles(level, ukey); len(files) > 0 {
		return files[0]
	}
	return nil
}

// FindFiles returns the tables of level (>= 1) whose user-key range holds
// ukey, in the level's order (newest versions first), as a subslice of
// v.Files[level]: one table, or none, except on a level with
// SharedBoundaries, where ukey may be the boundary of two or more.
func (v *Version) FindFiles(level int, ukey []byte) []*FileMetadata {
	checkSortedLevel(level)
	files := v.Files[level]
	if x := v.index[level]; x != nil && !v.SharedBoundaries[level] {
		// The usual case, without a closure: at most one table.
		rel, p := x.locate(ukey)
		if rel != 0 {
			return nil
		}
		i := firstGE(x.largest, files, (*FileMetadata).largestUkey, ukey, p)
		if i == len(files) {
			return nil
		}
		// In table i when its smallest key is <= ukey.
		if w := x.smallest[i]; w > p || w == p && bytes.Compare(files[i].smallestUkey(), ukey) > 0 {
			return nil
		}
		return files[i : i+1 : i+1]
	}
	i := v.searchLargest(level, ukey)
	j := i
	for j < len(files) && bytes.Compare(files[j].smallestUkey(), ukey) <= 0 {
		j++
		if !v.SharedBoundaries[level] {
			break
		}
	}
	return files[i:j:j]
}

// String renders v for people, one line per table in level order:
// "L<level> <num> size=<bytes> [<smallest> .. <largest>] seqs=[<s>,<l>]".
// An empty Version renders as the empty string.
func (v *Version) String() string {
	var sb strings.Builder
	for level, files := range v.Files {
		for _, f := range files {
			fmt.Fprintf(&sb, "L%d %s\n", level, f)
		}
	}
	return sb.String()
}

// Snapshot returns an edit that, applied to an empty Version, rebuilds v,
// with the given counters and comparer name set. It is written as the first
// record of every new MANIFEST. The edit shares v's FileMetadata. Compact
// pointers are not part of a Version; callers that keep them append them to
// the edit's CompactPointers.
func (v *Version) Snapshot(nextFileNum, lastSeq, logNum uint64, comparer string) *VersionEdit {
	e := &VersionEdit{
		Comparer:          comparer,
		LogNumber:         logNum,
		HasLogNumber:      true,
		NextFileNumber:    nextFileNum,
		HasNextFileNumber: true,
		LastSequence:      lastSeq,
		HasLastSequence:   true,
	}
	for level, files := range v.Files {
		for _, f := range files {
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
		}
	}
	return e
}

// checkOrdering verifies the ordering rules of a finished level and
// reports whether two adjacent tables share a boundary user key.
func checkOrdering(level int, files []*FileMetadata) (shared bool, err error) {
	if level == 0 {
		return false, nil
	}
	for i := 1; i < len(files); i++ {
		a, b := files[i-1], files[i]
		c := bytes.Compare(a.largestUkey(), b.smallestUkey())
		if c == 0 && base.CompareInternal(a.Largest, b.Smallest) < 0 && a.RangeDels == 0 && b.RangeDels == 0 {
			// One key's versions split between the two (LevelDB).
			shared = true
			continue
		}
		if c >= 0 {
			return false, base.CorruptionErrorf("manifest: overlapping tables in L%d: %06d [%s .. %s] and %06d [%s .. %s]",
				level,
				a.FileNum, base.FormatInternalKey(a.Smallest), base.FormatInternalKey(a.Largest),
				b.FileNum, base.FormatInternalKey(b.Smallest), base.FormatInternalKey(b.Largest))
		}
	}
	return shared, nil
}

// sortLevel orders files by the rules of level (see the package
// documentation).
func sortLevel(level int, files []*FileMetadata) {
	if level == 0 {
		slices.SortFunc(files, func(a, b *FileMetadata) int {
			if !a.SeqsUnknown && !b.SeqsUnknown && a.LargestSeq != b.LargestSeq {
				if a.LargestSeq > b.LargestSeq {
					return -1
				}
				return 1
			}
			switch {
			case a.FileNum > b.FileNum:
				return -1
			case a.FileNum < b.FileNum:
				return 1
			}
			return 0
		})
		return
	}
	slices.SortFunc(files, func(a, b *FileMetadata) int {
		if c := base.CompareInternal(a.Smallest, b.Smallest); c != 0 {
			return c
		}
		switch {
		case a.FileNum < b.FileNum:
			return -1
		case a.FileNum > b.FileNum:
			return 1
		}
		return 0
	})
}
