package manifest

import (
	"fmt"
	"math/rand"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
)

// meta builds a valid FileMetadata for user keys [lo, hi] with entries of
// sequence numbers [sseq, lseq].
func meta(num uint64, lo, hi string, sseq, lseq uint64) *FileMetadata {
	return &FileMetadata{
		FileNum:     num,
		Size:        num * 100,
		Smallest:    base.MakeInternalKey([]byte(lo), lseq, base.KindSet),
		Largest:     base.MakeInternalKey([]byte(hi), sseq, base.KindDelete),
		SmallestSeq: sseq,
		LargestSeq:  lseq,
	}
}

func randBytes(rng *rand.Rand, maxLen int) []byte {
	b := make([]byte, rng.Intn(maxLen+1))
	for i := range b {
		if rng.Intn(2) == 0 {
			b[i] = byte('a' + rng.Intn(4))
		} else {
			b[i] = byte(rng.Intn(256))
		}
	}
	return b
}

func randUint(rng *rand.Rand) uint64 {
	switch rng.Intn(4) {
	case 0:
		return uint64(rng.Intn(10))
	case 1:
		return uint64(rng.Intn(1 << 20))
	case 2:
		return rng.Uint64()
	}
	return ^uint64(0)
}

func randSeq(rng *rand.Rand) uint64 {
	if rng.Intn(8) == 0 {
		return base.MaxSeqNum
	}
	return rng.Uint64() % (base.MaxSeqNum + 1) >> uint(rng.Intn(56))
}

// randMeta returns random metadata that meets the invariants.
func randMeta(rng *rand.Rand) *FileMetadata {
	a, b := randBytes(rng, 12), randBytes(rng, 12)
	if string(a) > string(b) {
		a, b = b, a
	}
	s1, s2 := randSeq(rng), randSeq(rng)
	if s1 > s2 {
		s1, s2 = s2, s1
	}
	// Boundary key seqs in [s1, s2]; when the user keys are equal the
	// smallest key needs the larger trailer.
	k1 := s1 + rng.Uint64()%(s2-s1+1)
	k2 := s1 + rng.Uint64()%(s2-s1+1)
	if string(a) == string(b) && k1 < k2 {
		k1, k2 = k2, k1
	}
	m := &FileMetadata{
		FileNum:     randUint(rng),
		Size:        randUint(rng),
		Smallest:    base.MakeInternalKey(a, k1, base.KindSet),
		Largest:     base.MakeInternalKey(b, k2, base.Kind(rng.Intn(2))),
		SmallestSeq: s1,
		LargestSeq:  s2,
	}
	if rng.Intn(3) == 0 {
		// A table with range tombstones: bounds of kind RANGEDEL.
		m.RangeDels = 1 + uint64(rng.Intn(1000))
		m.Largest = base.MakeInternalKey(b, k2, base.KindRangeDelete)
		if string(a) != string(b) && rng.Intn(2) == 0 {
			m.Smallest = base.MakeInternalKey(a, k1, base.KindRangeDelete)
		}
	}
	if m.RangeDels == 0 && rng.Intn(4) == 0 {
		// A table recorded by LevelDB (tag 7): no sequence numbers.
		m.UnknownSeqs()
	}
	return m
}

// randEdit returns a random edit that Decode accepts.
func randEdit(rng *rand.Rand) *VersionEdit {
	e := &VersionEdit{}
	if rng.Intn(2) == 0 {
		e.Comparer = "cmp." + string(randBytes(rng, 10))
	}
	if rng.Intn(2) == 0 {
		e.LogNumber, e.HasLogNumber = randUint(rng), true
	}
	if rng.Intn(2) == 0 {
		e.PrevLogNumber, e.HasPrevLogNumber = randUint(rng), true
	}
	if rng.Intn(2) == 0 {
		e.NextFileNumber, e.HasNextFileNumber = randUint(rng), true
	}
	if rng.Intn(2) == 0 {
		e.LastSequence, e.HasLastSequence = randSeq(rng), true
	}
	for i := rng.Intn(3); i > 0; i-- {
		e.CompactPointers = append(e.CompactPointers, CompactPointer{
			Level: rng.Intn(NumLevels),
			Key:   base.MakeInternalKey(randBytes(rng, 10), randSeq(rng), base.KindSet),
		})
	}
	for i := rng.Intn(4); i > 0; i-- {
		e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: rng.Intn(NumLevels), FileNum: randUint(rng)})
	}
	for i := rng.Intn(5); i > 0; i-- {
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: rng.Intn(NumLevels), Meta: randMeta(rng)})
	}
	return e
}

// slotKey is the user key of slot i in the builder tests' key space.
func slotKey(i int) string { return fmt.Sprintf("k%04d", i) }

// versionGen builds random valid edit sequences and tracks the expected
// state: which level each live file is in.
type versionGen struct {
	rng     *rand.Rand
	nextNum uint64
	seq     uint64
	live    map[uint64]modelFile
}

type modelFile struct {
	level  int
	m      *FileMetadata
	lo, hi int // slot range
}

func newVersionGen(seed int64) *versionGen {
	return &versionGen{rng: rand.New(rand.NewSource(seed)), nextNum: 1, live: make(map[uint64]modelFile)}
}

// free reports whether slots [lo, hi] are unused at level among files,
// skipping the file numbered skip.
func free(files []modelFile, level, lo, hi int) bool {
	if level == 0 {
		return true
	}
	for _, f := range files {
		if f.level == level && f.lo <= hi && lo <= f.hi {
			return false
		}
	}
	return true
}

// liveNums returns the live file numbers, ascending.
func (g *versionGen) liveNums() []uint64 {
	var nums []uint64
	for n := range g.live {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums
}

// newFile makes a fresh file over a random slot range.
func (g *versionGen) newFile(level int, lo, hi int) modelFile {
	n := uint64(1 + g.rng.Intn(5))
	m := meta(g.nextNum, slotKey(lo), slotKey(hi), g.seq+1, g.seq+n)
	g.nextNum++
	g.seq += n
	return modelFile{level: level, m: m, lo: lo, hi: hi}
}

// validEdit returns a random edit that applies cleanly and keeps L1+
// disjoint, and the model state after it.
func (g *versionGen) validEdit() (*VersionEdit, map[uint64]modelFile) {
	e := &VersionEdit{}
	next := make(map[uint64]modelFile, len(g.live)+4)
	for k, v := range g.live {
		next[k] = v
	}
	nums := g.liveNums()
	// Deletions (some become moves to the next level).
	var moves []modelFile
	for i := g.rng.Intn(3); i > 0 && len(nums) > 0; i-- {
		j := g.rng.Intn(len(nums))
		num := nums[j]
		nums = slices.Delete(nums, j, j+1)
		f := next[num]
		delete(next, num)
		e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: f.level, FileNum: num})
		if f.level < NumLevels-1 && g.rng.Intn(2) == 0 {
			moves = append(moves, f)
		}
	}
	state := func() []modelFile {
		var s []modelFile
		for _, f := range next {
			s = append(s, f)
		}
		return s
	}
	for _, f := range moves {
		if free(state(), f.level+1, f.lo, f.hi) {
			f.level++
			next[f.m.FileNum] = f
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: f.level, Meta: f.m})
		}
	}
	for i := g.rng.Intn(4); i > 0; i-- {
		lo := g.rng.Intn(200)
		hi := lo + g.rng.Intn(8)
		level := g.rng.Intn(NumLevels)
		if !free(state(), level, lo, hi) {
			level = 0
		}
		f := g.newFile(level, lo, hi)
		next[f.m.FileNum] = f
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f.m})
	}
	g.rng.Shuffle(len(e.NewFiles), func(i, j int) { e.NewFiles[i], e.NewFiles[j] = e.NewFiles[j], e.NewFiles[i] })
	return e, next
}

// randomVersion builds a version of roughly n edits' worth of files.
func randomVersion(seed int64, edits int) (*Version, *versionGen) {
	g := newVersionGen(seed)
	v := &Version{}
	for i := 0; i < edits; i++ {
		e, next := g.validEdit()
		b := NewBuilder(v)
		if err := b.Apply(e); err != nil {
			panic(err)
		}
		nv, err := b.Finish()
		if err != nil {
			panic(err)
		}
		v, g.live = nv, next
	}
	return v, g
}
