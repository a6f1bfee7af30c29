package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// levelIndex is a search structure over the tables of one sorted level
// (>= 1), built with the Version. Finding a key's table by comparing it
// with each visited table's bound costs a pointer chase and a key
// comparison per step (about 190 ns over 184 tables, most of an absent
// key's Get at 10,000,000 keys). The index keeps, for each table, the 8
// bytes of its bounds that follow the prefix every bound of the level
// shares, as big-endian integers in two arrays: a search compares
// integers in a few cache lines, and reads a table's bound only when
// its 8 bytes equal the key's.
type levelIndex struct {
	// prefix is a prefix every bound of the level has: the longest one,
	// or shorter so that the window after it is filled (buildLevelIndex).
	prefix []byte
	// pre is window(prefix), for the check of a prefix of at most 8 bytes.
	pre uint64
	// smallest[i] and largest[i] are the window of table i's smallest and
	// largest user keys: the 8 bytes after prefix, zero-padded.
	smallest, largest []uint64
}

// window is base.KeyWindow: the first 8 bytes of b as a big-endian
// integer, zero-padded, whose order implies the keys' after a common
// prefix (equal windows leave it open).
func window(b []byte) uint64 { return base.KeyWindow(b) }

// tailWindow is base.TailWindow: window(ukey[cp:]), in one load when
// ukey holds 8 bytes.
func tailWindow(ukey []byte, cp int) uint64 { return base.TailWindow(ukey, cp) }

// buildLevelIndex indexes the tables of a sorted level; nil for none.
func buildLevelIndex(files []*FileMetadata) *levelIndex {
	n := len(files)
	if n == 0 {
		return nil
	}
	// The bounds of a sorted level are a non-decreasing sequence, so the
	// prefix they all share is the one the first and the last share.
	first, last := files[0].smallestUkey(), files[n-1].largestUkey()
	cp := 0
	for cp < len(first) && cp < len(last) && first[cp] == last[cp] {
		cp++
	}
	return indexAfter(files, cp)
}

// indexAfter builds the index of files on the windows that follow the
// first cp bytes, which every bound shares. The window starts early
// enough that the shortest bound fills it (its first bytes may then be
// common to all, which costs nothing): with fixed-length keys a search
// then never pads, and the window holds the bytes that tell the tables
// apart even when the prefix leaves fewer than 8.
func indexAfter(files []*FileMetadata, cp int) *levelIndex {
	first := files[0].smallestUkey()
	minLen := len(first)
	for _, f := range files {
		minLen = min(minLen, len(f.smallestUkey()), len(f.largestUkey()))
	}
	cp = max(0, min(cp, minLen-8))
	x := &levelIndex{
		prefix:   append([]byte(nil), first[:cp]...),
		pre:      window(first[:cp]),
		smallest: make([]uint64, len(files)),
		largest:  make([]uint64, len(files)),
	}
	for i, f := range files {
		x.smallest[i] = window(f.smallestUkey()[cp:])
		x.largest[i] = window(f.largestUkey()[cp:])
	}
	return x
}

// locate places ukey against the level's common prefix: -1 when ukey
// sorts before every bound, +1 after every bound, else 0 with p the
// window of ukey after the prefix.
func (x *levelIndex) locate(ukey []byte) (rel int, p uint64) {
	cp := len(x.prefix)
	if cp == 0 {
		return 0, window(ukey)
	}
	if cp <= 8 && len(ukey) >= 8 {
		// The prefix check as one integer comparison of ukey's first
		// 8 bytes, shifted to the prefix's length.
		if (binary.BigEndian.Uint64(ukey)^x.pre)>>(64-8*uint(cp)) == 0 {
			return 0, tailWindow(ukey, cp)
		}
	} else if len(ukey) >= cp && string(ukey[:cp]) == string(x.prefix) {
		return 0, tailWindow(ukey, cp)
	}
	// ukey does not start with the prefix: it is smaller than every key
	// that does, or larger than all of them.
	if bytes.Compare(ukey, x.prefix) < 0 {
		return -1, 0
	}
	return 1, 0
}

// firstGE returns the first i whose bound(files[i]) >= ukey, given the
// windows of those bounds (x.smallest or x.largest) and ukey's located
// window p (rel 0).
func firstGE(windows []uint64, files []*FileMetadata, bound func(*FileMetadata) []byte, ukey []byte, p uint64) int {
	lo := base.WindowLowerBound(windows, p)
	if lo == len(windows) || windows[lo] != p {
		return lo
	}
	// A run of tables whose windows equal ukey's: their bounds are still
	// sorted, so binary searches settle it, the second with whole keys (a
	// run is long when the level's keys differ only after the window).
	end := lo + sort.Search(len(windows)-lo, func(k int) bool { return windows[lo+k] > p })
	return lo + sort.Search(end-lo, func(k int) bool { return bytes.Compare(bound(files[lo+k]), ukey) >= 0 })
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// searchLargest returns the first table of a sorted level (>= 1) whose
// largest user key is >= ukey (len(files) when none is).
func (v *Version) searchLargest(level int, ukey []byte) int {
	return v.searchBound(level, ukey, true)
}

// searchSmallest returns the first table of a sorted level (>= 1) whose
// smallest user key is >= ukey (len(files) when none is).
func (v *Version) searchSmallest(level int, ukey []byte) int {
	return v.searchBound(level, ukey, false)
}

// searchBound returns the first table of a sorted level whose largest
// (or smallest) user key is >= ukey, through the level's index when the
// Version has one.
func (v *Version) searchBound(level int, ukey []byte, largest bool) int {
	files := v.Files[level]
	bound := (*FileMetadata).smallestUkey
	if largest {
		bound = (*FileMetadata).largestUkey
	}
	x := v.index[level]
	if x == nil {
		return sort.Search(len(files), func(i int) bool { return bytes.Compare(bound(files[i]), ukey) >= 0 })
	}
	rel, p := x.locate(ukey)
	switch {
	case rel < 0:
		return 0
	case rel > 0:
		return len(files)
	case largest:
		return firstGE(x.largest, files, bound, ukey, p)
	default:
		return firstGE(x.smallest, files, bound, ukey, p)
	}
}

// SearchLargest returns the index of the first table of level (>= 1)
// whose largest user key is >= ukey, or NumFiles(level) when there is
// none: the first table not wholly before ukey.
func (v *Version) SearchLargest(level int, ukey []byte) int {
	checkSortedLevel(level)
	return v.searchLargest(level, ukey)
}

// SearchSmallest returns the index of the first table of level (>= 1)
// whose smallest user key is >= ukey, or NumFiles(level) when there is
// none: the tables before it are the ones that start before ukey.
func (v *Version) SearchSmallest(level int, ukey []byte) int {
	checkSortedLevel(level)
	return v.searchSmallest(level, ukey)
}

// checkSortedLevel panics unless level is one of the sorted levels (>= 1),
// the only ones the searches apply to.
func checkSortedLevel(level int) {
	if level < 1 || level >= NumLevels {
		panic(fmt.Sprintf("manifest: a search of level %d, which is not sorted", level))
	}
}

// FindFileBatch sets at[j] to the index in Files[level] (level >= 1) of
// the table whose user-key range holds ukeys[j], or -1 when none does;
// on a level with SharedBoundaries, of the first such table (see
// FindFiles for the others). at must be as long as ukeys.
//
// It is FindFiles for a batch (DB.MultiGet), with each key's search in
// one pass of a loop: the key's window is read in place when it follows
// the level's prefix, and the branch-free search takes as many steps for
// every key, so the loop's branches are predicted and the searches of
// successive keys overlap in the processor, where FindFiles' calls and
// comparisons stand between them.
func (v *Version) FindFileBatch(level int, ukeys [][]byte, at []int) {
	checkSortedLevel(level)
	files := v.Files[level]
	x := v.index[level]
	if x == nil || len(files) == 0 {
		for j, k := range ukeys {
			at[j] = -1
			if i := v.searchLargest(level, k); i < len(files) && bytes.Compare(files[i].smallestUkey(), k) <= 0 {
				at[j] = i
			}
		}
		return
	}
	x.findBatch(files, ukeys, at[:len(ukeys)])
}

// findBatch is FindFileBatch for an indexed level.
func (x *levelIndex) findBatch(files []*FileMetadata, ukeys [][]byte, at []int) {
	// A prefix of more than 8 bytes is checked by locate, key by key.
	every := len(x.prefix) > 8
	if !every && x.findWindows(ukeys, at) {
		return
	}
	// The keys findWindows left: a search through locate and firstGE.
	w, s := x.largest, x.smallest
	for j, k := range ukeys {
		if !every && at[j] != findLater {
			continue
		}
		at[j] = -1
		rel, p := x.locate(k)
		if rel != 0 {
			continue
		}
		i := firstGE(w, files, (*FileMetadata).largestUkey, k, p)
		if i == len(w) || s[i] > p || s[i] == p && bytes.Compare(files[i].smallestUkey(), k) > 0 {
			continue
		}
		at[j] = i
	}
}

// findLater marks a key findWindows leaves to findBatch.
const findLater = -2

// findWindows is findBatch for every key the level's windows place on
// their own, on a level whose prefix has at most 8 bytes: a key of 8
// bytes or more that starts with the prefix has its window read in
// place, as tailWindow reads it, and a window equal to no bound tells
// the order. Other keys it marks findLater; it reports whether there
// were none. It makes no call, so the compiler keeps the loop's state in
// registers, and the branch-free search takes as many steps for every
// key, so the searches of successive keys overlap in the processor.
func (x *levelIndex) findWindows(ukeys [][]byte, at []int) bool {
	w := x.largest
	s := x.smallest[:len(w)]
	at = at[:len(ukeys)]
	cp, pre := len(x.prefix), x.pre
	if cp > 8 { // findBatch does not ask
		for j := range at {
			at[j] = findLater
		}
		return false
	}
	// The bits of the prefix in a key's first 8 bytes (none when cp is 0:
	// a shift of 64 leaves 0, and every key of 8 bytes or more passes).
	mask := ^uint64(0) << (64 - 8*uint(cp))
	open := 0 // 1 once a key is left to findBatch
	for j, k := range ukeys {
		if len(k) < 8 || (binary.BigEndian.Uint64(k)^pre)&mask != 0 {
			at[j], open = findLater, 1
			continue
		}
		// The 8 bytes after the prefix; when fewer follow it, the last
		// 8 of the key shifted left, which zero-pads them.
		off := min(cp, len(k)-8)
		p := binary.BigEndian.Uint64(k[off:]) << (8 * uint(cp-off))
		// firstGE's branch-free lower bound, its last step included; on a
		// level of up to 8 tables, the count of windows below p, which is
		// the same and costs fewer instructions than the steps.
		i := 0
		if len(w) <= 8 {
			for _, b := range w {
				i += b2i(b < p)
			}
		} else {
			for n := len(w); n > 1; {
				half := n >> 1
				i += half & -b2i(w[i+half-1] < p)
				n -= half
			}
			i += b2i(w[i] < p)
		}
		// Table i holds the key when it is a table (i < len(w)) whose
		// smallest window is below p; a window equal to p (rare, and the
		// branch predicted) leaves it open. Otherwise without a branch:
		// on a level that covers part of the key space, whether a key
		// falls in a table is as unpredictable as a search step. (Past
		// the last table, c is the last, whose windows are below p.)
		c := min(i, len(w)-1)
		if w[c] == p || s[c] == p {
			at[j], open = findLater, 1
			continue
		}
		in := b2i(i < len(w)) & b2i(s[c] < p)
		at[j] = (i+1)&-in - 1 // i, or -1
	}
	return open == 0
}

// buildLevel0Index indexes the tables of level 0 for InRangeLevel0; nil
// for none. Their ranges overlap, so the prefix is the one every bound
// shares, found by comparing each with the first.
func buildLevel0Index(files []*FileMetadata) *levelIndex {
	if len(files) == 0 {
		return nil
	}
	first := files[0].smallestUkey()
	cp := len(first)
	for _, f := range files {
		for _, b := range [2][]byte{f.smallestUkey(), f.largestUkey()} {
			n := 0
			for n < cp && n < len(b) && first[n] == b[n] {
				n++
			}
			cp = n
		}
	}
	return indexAfter(files, cp)
}

// MaxInRangeLevel0 is the most level-0 tables InRangeLevel0 checks: a bit
// each in a byte.
const MaxInRangeLevel0 = 8

// InRangeLevel0 sets in[j] to the level-0 tables whose user-key ranges
// hold ukeys[j], bit t for v.Files[0][t]: the range checks of a batch
// (DB.MultiGet) against every level-0 table, whose ranges overlap, so
// each is checked. It returns the tables whose ranges hold every key (the
// AND of in). Level 0 must hold at most MaxInRangeLevel0 tables, and in
// must be as long as ukeys.
//
// Each key is read once for all the tables: the 8 bytes after the prefix
// every bound of the level shares are compared, as integers, with each
// table's bounds' (levelIndex), and whole keys only for a key shorter
// than 8 bytes or whose 8 bytes equal a bound's. Two whole-key
// comparisons a key and table cost about 11 ns; this is a few
// instructions a table.
func (v *Version) InRangeLevel0(ukeys [][]byte, in []uint8) (every uint8) {
	files := v.Files[0]
	if len(files) > MaxInRangeLevel0 {
		panic(fmt.Sprintf("manifest: InRangeLevel0 of %d tables (at most %d)", len(files), MaxInRangeLevel0))
	}
	in = in[:len(ukeys)]
	every = ^uint8(0)
	x := v.index[0]
	if x == nil {
		for j, k := range ukeys {
			in[j] = inRangeLevel0Slow(files, k)
			every &= in[j]
		}
		return every
	}
	for start := 0; start < len(ukeys); start += 64 {
		end := min(start+64, len(ukeys))
		b, slow := x.inRangeWindows(ukeys[start:end], in[start:end])
		every &= b
		// The keys the windows leave open, by whole keys.
		for ; slow != 0; slow &= slow - 1 {
			j := start + bits.TrailingZeros64(slow)
			in[j] = inRangeLevel0Slow(files, ukeys[j])
			every &= in[j]
		}
	}
	return every
}

// inRangeWindows is InRangeLevel0 for up to 64 keys, through the level's
// index x, for every key its windows place: bit j of slow is set for a
// key they leave to whole-key comparisons (in[j] is then 0), and every is
// the AND of the others' answers. The keys' windows are read in one loop
// and compared with the tables' in another: with a prefix of at most 8
// bytes (the usual case) neither makes a call, and each has few enough
// values live that the compiler keeps them in registers.
func (x *levelIndex) inRangeWindows(ukeys [][]byte, in []uint8) (every uint8, slow uint64) {
	var ps [64]uint64
	ukeys = ukeys[:min(len(ukeys), len(ps))]
	in = in[:len(ukeys)]
	// out: the keys without the prefix every bound has, which sort before
	// all the bounds or after all of them.
	var out uint64
	cp := len(x.prefix)
	if cp <= 8 {
		// The prefix checked in one integer comparison of a key's first 8
		// bytes (mask is 0 for no prefix).
		pre, mask := x.pre, ^uint64(0)<<(64-8*uint(cp))
		for j, k := range ukeys {
			switch {
			case len(k) < 8:
				slow |= 1 << uint(j)
			case (binary.BigEndian.Uint64(k)^pre)&mask != 0:
				out |= 1 << uint(j)
			default:
				// The 8 bytes after the prefix; when fewer follow it, the
				// last 8 of the key shifted left, which zero-pads them.
				off := min(cp, len(k)-8)
				ps[j] = binary.BigEndian.Uint64(k[off:]) << (8 * uint(cp-off))
			}
		}
	} else {
		for j, k := range ukeys {
			switch {
			case len(k) < cp:
				slow |= 1 << uint(j)
			case string(k[:cp]) != string(x.prefix):
				out |= 1 << uint(j)
			default:
				ps[j] = tailWindow(k, cp)
			}
		}
	}
	// Table by table, each key's window compared with the table's
	// bounds without a branch: whether a key falls in a table is as
	// unpredictable as a search step. eqs[j] is set when key j's window
	// equals a bound's, which leaves the order to whole keys (rare).
	in = in[:len(ukeys)]
	clear(in)
	var eqs [64]uint8
	ps1, eqs1 := ps[:len(in)], eqs[:len(in)]
	for t, lo := range x.smallest {
		hi, bit := x.largest[t], uint8(1)<<uint(t&7)
		for j, p := range ps1 {
			in[j] |= uint8(-b2i(lo < p)&-b2i(p < hi)) & bit
			eqs1[j] |= uint8(b2i(p == lo) | b2i(p == hi))
		}
	}
	every = ^uint8(0)
	if out != 0 {
		every = 0
	}
	for j := range in {
		switch {
		case (out|slow)>>uint(j)&1 != 0:
			in[j] = 0
		case eqs1[j] != 0:
			in[j], slow = 0, slow|1<<uint(j)
		default:
			every &= in[j]
		}
	}
	return every, slow
}

// inRangeLevel0Slow is InRangeLevel0 for one key, by whole-key
// comparisons.
func inRangeLevel0Slow(files []*FileMetadata, k []byte) uint8 {
	var in uint8
	for t, f := range files {
		if bytes.Compare(k, f.smallestUkey()) >= 0 && bytes.Compare(k, f.largestUkey()) <= 0 {
			in |= 1 << uint(t)
		}
	}
	return in
}
