package compaction

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// levelOf returns n tables of size bytes each over disjoint key ranges
// (level 0's all span the same range, as under random writes).
func levelOf(level, n int, size uint64) []*manifest.FileMetadata {
	var fs []*manifest.FileMetadata
	for i := 0; i < n; i++ {
		lo, hi := fmt.Sprintf("k%04d", i*10), fmt.Sprintf("k%04d", i*10+9)
		if level == 0 {
			lo, hi = "k0000", "k9999"
		}
		fs = append(fs, &manifest.FileMetadata{
			FileNum:  uint64(level*1000 + i + 1),
			Size:     size,
			Smallest: base.MakeInternalKey([]byte(lo), uint64(100-i), base.KindSet),
			Largest:  base.MakeInternalKey([]byte(hi), uint64(100-i), base.KindSet),
		})
	}
	return fs
}

// TestPickDrainsBottomUp checks the score adjustment: a level whose
// output level is over its target waits while that level is fuller, so
// an overfull level 1 is compacted before level 0 is pushed into it, and
// level 0 goes first once level 1 is only a little over.
func TestPickDrainsBottomUp(t *testing.T) {
	o := &Options{L0Trigger: 4, BaseLevelBytes: 100, LevelMultiplier: 10, TargetFileSize: 10}
	cases := []struct {
		l0, l1, l2 int // tables (level 0) and 10-byte tables (levels 1, 2)
		want       int // level picked, -1 none
	}{
		{l0: 5, l1: 30, l2: 5, want: 1},    // L0 1.25, L1 3.0: L1 first
		{l0: 12, l1: 11, l2: 5, want: 0},   // L0 3.0 / L1 1.1 = 2.7 > 1.1
		{l0: 12, l1: 30, l2: 500, want: 2}, // L2 5.0 is the deepest overfull
		{l0: 3, l1: 5, l2: 5, want: -1},    // nothing over
		{l0: 4, l1: 0, l2: 0, want: 0},     // plain level-0 trigger
	}
	for _, tc := range cases {
		v := &manifest.Version{}
		v.Files[0] = levelOf(0, tc.l0, 10)
		v.Files[1] = levelOf(1, tc.l1, 10)
		v.Files[2] = levelOf(2, tc.l2, 1)
		for _, f := range v.Files[2] {
			f.Size = 10
		}
		var ptrs [NumLevels][]byte
		c := Pick(v, o, &ptrs)
		got := -1
		if c != nil {
			got = c.Level
		}
		if got != tc.want {
			t.Errorf("L0 %d tables, L1 %d, L2 %d: picked level %d, want %d (scores %v)", tc.l0, tc.l1, tc.l2, got, tc.want, Scores(v, o))
		}
	}
}

// TestPickHugeTargets: level targets that overflow 64 bits saturate
// instead of wrapping to 0, and an empty level never scores (a 0/0 NaN
// score had Pick take an empty level and index its first table: Open
// panicked with LBaseMaxBytes 1 TiB and LevelMultiplier 64).
func TestPickHugeTargets(t *testing.T) {
	o := &Options{L0Trigger: 4, BaseLevelBytes: 1 << 40, LevelMultiplier: 64, TargetFileSize: 2 << 20}
	for l := 2; l < NumLevels; l++ {
		if o.MaxBytesForLevel(l) < o.MaxBytesForLevel(l-1) {
			t.Fatalf("level %d target %d below level %d's", l, o.MaxBytesForLevel(l), l-1)
		}
	}
	var ptrs [NumLevels][]byte
	if c := Pick(&manifest.Version{}, o, &ptrs); c != nil {
		t.Fatalf("picked level %d of an empty tree", c.Level)
	}
	v := &manifest.Version{}
	v.Files[5] = levelOf(5, 3, 10)
	if c := Pick(v, o, &ptrs); c != nil {
		t.Fatalf("picked level %d (scores %v) with every level under its target", c.Level, Scores(v, o))
	}
}
