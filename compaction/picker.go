package compaction

import (
	"bytes"
	"math"
	"math/bits"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// NumLevels is the number of levels of the tree.
const NumLevels = manifest.NumLevels

// Options shape the tree.
type Options struct {
	// L0Trigger is the number of level-0 tables that starts a compaction
	// into level 1.
	L0Trigger int
	// BaseLevelBytes is level 1's target size; each level below is
	// LevelMultiplier times the one above.
	BaseLevelBytes uint64
	// LevelMultiplier is the size ratio between adjacent levels.
	LevelMultiplier uint64
	// TargetFileSize is the size at which compaction outputs are split.
	TargetFileSize uint64
}

// MaxBytesForLevel returns the target size of level (>= 1).
func (o *Options) MaxBytesForLevel(level int) uint64 {
	b := o.BaseLevelBytes
	for l := 1; l < level; l++ {
		hi, lo := bits.Mul64(b, o.LevelMultiplier)
		if hi != 0 {
			return math.MaxUint64 // saturate: 1 TiB x 64^4 is 2^64
		}
		b = lo
	}
	return b
}

// maxGrandparentOverlap bounds how much of the level below the output a
// single output table may overlap, so a later compaction of that table
// stays small (LevelDB's rule: ten target files).
func (o *Options) maxGrandparentOverlap() uint64 { return 10 * o.TargetFileSize }

// Compaction describes one compaction: Inputs[0] from Level, Inputs[1]
// from Level+1, written to Level+1; or, InPlace, Inputs[0] rewritten into
// Level itself (Inputs[1] empty).
type Compaction struct {
	Level        int
	Inputs       [2][]*manifest.FileMetadata
	Grandparents []*manifest.FileMetadata // tables below the output level overlapping the inputs
	Score        float64
	// Manual is set for compactions asked for by CompactRange.
	Manual bool
	// InPlace rewrites tables of Level into Level (see PickRangeInPlace).
	InPlace bool
}

// OutputLevel is the level the compaction writes to.
func (c *Compaction) OutputLevel() int {
	if c.InPlace {
		return c.Level
	}
	return c.Level + 1
}

// IsTrivialMove reports whether the compaction can move its one input
// table down a level without rewriting it: nothing overlaps it below, and
// it would not overlap too much of the level after that.
func (c *Compaction) IsTrivialMove(o *Options) bool {
	return len(c.Inputs[0]) == 1 && len(c.Inputs[1]) == 0 && totalSize(c.Grandparents) <= o.maxGrandparentOverlap()
}

// InputBytes is the total size of the input tables.
func (c *Compaction) InputBytes() uint64 { return totalSize(c.Inputs[0]) + totalSize(c.Inputs[1]) }

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// userRange returns the smallest and largest user keys of files.
func userRange(files ...[]*manifest.FileMetadata) (smallest, largest []byte) {
	first := true
	for _, fs := range files {
		for _, f := range fs {
			s, l := base.UserKey(f.Smallest), base.UserKey(f.Largest)
			if first || bytes.Compare(s, smallest) < 0 {
				smallest = s
			}
			if first || bytes.Compare(l, largest) > 0 {
				largest = l
			}
			first = false
		}
	}
	return smallest, largest
}

// Scores returns each level's compaction score: for level 0 its table
// count over L0Trigger, for the others its size over its target. The last
// level never needs compacting.
func Scores(v *manifest.Version, o *Options) [NumLevels]float64 {
	var s [NumLevels]float64
	s[0] = float64(len(v.Files[0])) / float64(o.L0Trigger)
	for l := 1; l < NumLevels-1; l++ {
		s[l] = float64(v.LevelBytes(l)) / float64(o.MaxBytesForLevel(l))
	}
	return s
}

// Pick chooses the compaction the tree needs most, or nil when every
// score is below 1. pointers holds, per level, the largest internal key of
// the last compaction there, so levels are compacted round-robin; Pick
// does not update it (the caller records the compaction's end key).
func Pick(v *manifest.Version, o *Options, pointers *[NumLevels][]byte) *Compaction {
	scores := Scores(v, o)
	level, best := -1, 0.0
	for l, s := range scores {
		if !(s >= 1) { // NaN too: an empty level of target 0
			continue
		}
		// A level whose output level is itself over its target waits
		// for it: compacting into an overfull level rewrites all of it
		// for a few tables' worth of input, and that level only grows.
		// Dividing by the output's score drains the tree bottom-up (the
		// deepest overfull level keeps its full score).
		adj := s
		if l+1 < NumLevels && scores[l+1] > 1 {
			adj /= scores[l+1]
		}
		if level < 0 || adj >= best {
			level, best = l, adj
		}
	}
	if level < 0 {
		return nil
	}
	c := &Compaction{Level: level, Score: scores[level]}
	if level == 0 {
		// Level-0 tables overlap each other: take every one that overlaps
		// the oldest, and keep widening the range until it is closed, so
		// no newer version of a key is left above an older one moved down.
		c.Inputs[0] = expand(v, 0, v.Files[0][len(v.Files[0])-1:])
	} else {
		files := v.Files[level]
		pick := files[0]
		if p := pointers[level]; p != nil {
			for _, f := range files {
				if base.CompareInternal(f.Largest, p) > 0 {
					pick = f
					break
				}
			}
		}
		// A table that shares a boundary key with its neighbour (LevelDB
		// can write such levels) goes down with it: moving one of the two
		// would leave older versions of the key above newer ones.
		c.Inputs[0] = expand(v, level, []*manifest.FileMetadata{pick})
	}
	setupOtherInputs(v, o, c)
	return c
}

// expand grows a set of tables of level to every table of the level
// overlapping their user-key range, until the range stops growing. On
// level 0 that is LevelDB's transitive expansion; on the others it adds
// only the neighbours that share a boundary user key (Version's
// SharedBoundaries), and nothing where the level has none.
func expand(v *manifest.Version, level int, files []*manifest.FileMetadata) []*manifest.FileMetadata {
	if level > 0 && !v.SharedBoundaries[level] {
		return files
	}
	smallest, largest := userRange(files)
	for {
		in := v.Overlaps(level, smallest, largest)
		s, l := userRange(in)
		if bytes.Equal(s, smallest) && bytes.Equal(l, largest) {
			return in
		}
		smallest, largest = s, l
	}
}

// setupOtherInputs adds the overlapping tables of the output level, and
// the grandparents used to split outputs.
func setupOtherInputs(v *manifest.Version, o *Options, c *Compaction) {
	smallest, largest := userRange(c.Inputs[0])
	// The output level's tables that share a boundary key with those
	// (LevelDB's split keys) come too, as in LevelDB's AddBoundaryInputs:
	// rewriting one of two would drop a tombstone whose older versions
	// the other still holds, or leave those versions above newer ones.
	c.Inputs[1] = expand(v, c.Level+1, v.Overlaps(c.Level+1, smallest, largest))
	all0, all1 := userRange(c.Inputs[0], c.Inputs[1])
	if c.Level+2 < NumLevels {
		c.Grandparents = v.Overlaps(c.Level+2, all0, all1)
	}
}

// PickRange returns a compaction of every table of level that overlaps
// [start, limit] (nil bounds are open) into level+1, or nil when none does.
func PickRange(v *manifest.Version, o *Options, level int, start, limit []byte) *Compaction {
	if level >= NumLevels-1 {
		return nil
	}
	in := v.Overlaps(level, start, limit)
	if len(in) == 0 {
		return nil
	}
	in = expand(v, level, in)
	c := &Compaction{Level: level, Manual: true}
	c.Inputs[0] = in
	setupOtherInputs(v, o, c)
	return c
}

// PickRangeInPlace returns a compaction that rewrites, into level itself,
// the first run of adjacent tables of level (>= 1) that overlap [start,
// limit] (nil bounds are open) and are not in skip, or nil when there is
// none. CompactRange uses it on the deepest level holding data, which
// compacting level by level never rewrites: without it the versions and
// tombstones a released snapshot kept there would stay until that level
// outgrew its target. A run stops at a skipped table, so the outputs,
// which span the run's keys, never overlap a table left in the level;
// the caller adds the outputs to skip and asks again for the next run.
func PickRangeInPlace(v *manifest.Version, o *Options, level int, start, limit []byte, skip map[uint64]bool) *Compaction {
	if level < 1 || level >= NumLevels {
		return nil
	}
	var run []*manifest.FileMetadata
	for _, f := range v.Overlaps(level, start, limit) {
		if skip[f.FileNum] {
			if len(run) > 0 {
				break
			}
			continue
		}
		run = append(run, f)
	}
	if len(run) == 0 {
		return nil
	}
	// A run ending (or starting) inside a split key takes the neighbour
	// too (see setupOtherInputs); a neighbour that is one of skip's
	// outputs never shares a key with the run, as outputs are cut
	// between user keys.
	run = expand(v, level, run)
	c := &Compaction{Level: level, Manual: true, InPlace: true}
	c.Inputs[0] = run
	if level+1 < NumLevels {
		s, l := userRange(run)
		c.Grandparents = v.Overlaps(level+1, s, l)
	}
	return c
}

// IsBaseLevelForKey reports whether no level below the compaction's output
// can hold ukey, so a tombstone for it can be dropped.
func (c *Compaction) IsBaseLevelForKey(v *manifest.Version, ukey []byte) bool {
	for l := c.OutputLevel() + 1; l < NumLevels; l++ {
		if len(v.Overlaps(l, ukey, ukey)) > 0 {
			return false
		}
	}
	return true
}
