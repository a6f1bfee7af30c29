package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// The capacity tests check the bound documented on MaxMemoryUsage without
// allocating gigabytes: after every Add, the number of slabs must stay
// within the straight line from slabSlack slabs at no usage to maxSlabs
// slabs at MaxMemoryUsage. The proof in arena.go shows the count grows at
// most linearly in the usage, a slab per 256 KiB at worst, so a memtable
// that respects this line at a few hundred MiB for the worst sizes
// respects it at MaxMemoryUsage, where the line reaches maxSlabs.

// slabLimit is the most slabs a memtable with the given usage may hold.
func slabLimit(usage int) int64 {
	return slabSlack + int64(usage)*(maxSlabs-slabSlack)/MaxMemoryUsage
}

func checkSlabBound(t testing.TB, m *MemTable, what string) {
	t.Helper()
	u := m.ApproximateMemoryUsage()
	if n := int64(len(m.w.slabs)); n > slabLimit(u) {
		t.Fatalf("%s: %d slabs for %d bytes of usage (%.1f KiB per slab); at most %d allowed, %d at MaxMemoryUsage",
			what, n, u, float64(u)/float64(n)/1024, slabLimit(u), maxSlabs)
	}
}

// peekHeight returns the height the next Add will draw, without drawing it.
func peekHeight(m *MemTable) int {
	saved := m.rng
	h := m.randomHeight()
	m.rng = saved
	return h
}

// capFiller adds entries with ascending 8-byte key numbers followed by
// zero padding, checking the slab bound and the MaxEntryOverhead promise
// after every Add.
type capFiller struct {
	t    testing.TB
	m    *MemTable
	what string
	seq  uint64
	kbuf []byte

	ulens  []int    // ulens[i-1]: the length of key number i
	values [][]byte // values[i-1]: its value

	boundAtEnd bool // check the slab bound only in verify, not after every Add
}

func newCapFiller(t testing.TB, what string) *capFiller {
	return &capFiller{t: t, m: New(), what: what, kbuf: make([]byte, 9<<20)}
}

// key returns user key number i, ulen bytes long (at least 8).
func (f *capFiller) key(i uint64, ulen int) []byte {
	ulen = max(ulen, 8)
	binary.BigEndian.PutUint64(f.kbuf, i)
	return f.kbuf[:ulen]
}

// add adds (key number seq, padded to ulen bytes) → value.
func (f *capFiller) add(ulen int, value []byte) {
	f.t.Helper()
	f.seq++
	k := f.key(f.seq, ulen)
	before := f.m.ApproximateMemoryUsage()
	f.m.Add(f.seq, base.KindSet, k, value)
	f.ulens, f.values = append(f.ulens, len(k)), append(f.values, value)
	if d := f.m.ApproximateMemoryUsage() - before; d > len(k)+len(value)+MaxEntryOverhead {
		f.t.Fatalf("%s: Add of a %d-byte key and %d-byte value grew usage by %d, more than MaxEntryOverhead = %d beyond them",
			f.what, len(k), len(value), d, MaxEntryOverhead)
	}
	if !f.boundAtEnd {
		checkSlabBound(f.t, f.m, f.what)
	}
}

// addNode adds an entry with an empty value whose node takes exactly size
// bytes (a multiple of 4), or the smallest node its height allows.
func (f *capFiller) addNode(size int) {
	f.t.Helper()
	f.add(size-hdrSize-linkSize*peekHeight(f.m)-base.TrailerLen, nil)
}

// verify checks the skiplist structure and reads back a sample of entries.
func (f *capFiller) verify() {
	f.t.Helper()
	checkSlabBound(f.t, f.m, f.what)
	checkStructure(f.t, f.m)
	if f.m.Len() != int(f.seq) {
		f.t.Fatalf("%s: Len = %d after %d Adds", f.what, f.m.Len(), f.seq)
	}
	step := max(f.seq/200, 1)
	for i := uint64(1); i <= f.seq; i += step {
		k := f.key(i, f.ulens[i-1])
		v, kind, found := f.m.Get(k, base.MaxSeqNum)
		if !found || kind != base.KindSet || !bytes.Equal(v, f.values[i-1]) {
			f.t.Fatalf("%s: Get(key %d of %d bytes) = %d bytes, %v, %v", f.what, i, len(k), len(v), kind, found)
		}
	}
	it := f.m.NewIterator()
	n := uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		n++
		u := base.UserKey(it.Key())
		if binary.BigEndian.Uint64(u) != n || len(u) != f.ulens[n-1] || !bytes.Equal(it.Value(), f.values[n-1]) {
			f.t.Fatalf("%s: entry %d has key number %d of %d bytes and a %d-byte value", f.what, n, binary.BigEndian.Uint64(u), len(u), len(it.Value()))
		}
		if z := u[8:]; len(z) > 0 && (z[0] != 0 || z[len(z)-1] != 0 || !bytes.Equal(z, f.kbuf[8:len(u)])) {
			f.t.Fatalf("%s: entry %d: key padding is not zero", f.what, n)
		}
	}
	if n != f.seq {
		f.t.Fatalf("%s: iterated %d of %d entries", f.what, n, f.seq)
	}
}

// capTarget is the usage each capacity case fills its memtable to.
func capTarget(full int) int {
	if testing.Short() {
		return full / 4
	}
	return full
}

// TestArenaExhaustionReport reproduces the original report: 4,100 entries
// with 17 KiB keys and small values (about 70 MiB) exhausted the arena's
// 4096 slabs and panicked, because each such node was bigger than a quarter
// of the 64 KiB first slab and got a slab of its own. It checks the slab
// bound only at the end, so on such an arena it fails with that panic.
func TestArenaExhaustionReport(t *testing.T) {
	f := newCapFiller(t, "17 KiB keys")
	f.boundAtEnd = true
	for i := uint64(1); i <= 4100; i++ {
		f.add(17<<10, []byte(fmt.Sprintf("value %d", i)))
	}
	f.verify()
	t.Logf("%d entries, %d bytes of usage, %d slabs", f.m.Len(), f.m.ApproximateMemoryUsage(), len(f.m.w.slabs))
}

// TestArenaKeysOver256KiB is the same report with keys just over 256 KiB:
// 4,100 of them would be about 1 GiB, so this adds as many as fit in a
// scaled-down usage and checks the slab count against the bound, which at
// MaxMemoryUsage is maxSlabs.
func TestArenaKeysOver256KiB(t *testing.T) {
	f := newCapFiller(t, "keys of 256 KiB + 1")
	for f.m.ApproximateMemoryUsage() < capTarget(256<<20) {
		f.add(256<<10+1, []byte(fmt.Sprintf("value %d", f.seq+1)))
	}
	f.verify()
}

// TestArenaAdversarialSizes fills memtables with nodes of the sizes that
// waste the most slab space under various designs: just over a quarter of
// each slab size, just over the largest node packed into shared slabs,
// just over and under 1 MiB, the smallest nodes, and patterns that leave a
// shared slab as empty as possible when it is left behind.
func TestArenaAdversarialSizes(t *testing.T) {
	const (
		KiB = 1 << 10
		MiB = 1 << 20
	)
	cases := []struct {
		name  string
		sizes []int // node sizes, added cyclically
	}{
		{"smallest", []int{24}},
		{"16KiB+4", []int{16*KiB + 4}},
		{"32KiB+4", []int{32*KiB + 4}},
		{"64KiB+4", []int{64*KiB + 4}},
		{"128KiB+4", []int{128*KiB + 4}},
		{"256KiB", []int{256 * KiB}},
		{"256KiB+4", []int{256*KiB + 4}},
		{"384KiB+4", []int{384*KiB + 4}},
		{"512KiB+4", []int{512*KiB + 4}},
		{"768KiB+4", []int{768*KiB + 4}},
		{"1MiB-4", []int{MiB - 4}},
		{"1MiB", []int{MiB}},
		{"1MiB+4", []int{MiB + 4}},
		{"2MiB+4", []int{2*MiB + 4}},
		{"3x256KiB then tiny", []int{256 * KiB, 256 * KiB, 256 * KiB, 24}},
		{"tiny then 256KiB", []int{24, 256 * KiB}},
		{"tiny then 256KiB+4", []int{24, 256*KiB + 4}},
		{"tiny then 16KiB+4", []int{24, 16*KiB + 4}},
		{"rising quarters", []int{24, 16*KiB + 4, 32*KiB + 4, 64*KiB + 4, 128*KiB + 4, 256*KiB + 4}},
		{"falling quarters", []int{256*KiB + 4, 128*KiB + 4, 64*KiB + 4, 32*KiB + 4, 16*KiB + 4, 24}},
		{"half slabs", []int{512*KiB + 4, 512*KiB - 4, 24}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newCapFiller(t, tc.name)
			target := capTarget(64 << 20)
			if tc.sizes[0] < 1024 && len(tc.sizes) == 1 {
				target /= 8 // millions of Adds, and the bound is loose for them
			}
			for i := 0; f.m.ApproximateMemoryUsage() < target; i++ {
				f.addNode(tc.sizes[i%len(tc.sizes)])
			}
			f.verify()
		})
	}
}

// TestArenaRandomSizes mixes key sizes from empty to 8 MiB, log-uniformly,
// with values from empty to 1 MiB (inline or out of line), up to a few
// hundred MiB of usage.
func TestArenaRandomSizes(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	logUniform := func(maxLog int) int { return int(rng.Int63n(1 << rng.Intn(maxLog+1))) }
	f := newCapFiller(t, "random sizes")
	target := capTarget(320 << 20)
	for f.m.ApproximateMemoryUsage() < target {
		ulen := logUniform(22) // below 4 MiB
		if rng.Intn(500) == 0 {
			ulen = 8 << 20
		}
		var v []byte
		if rng.Intn(3) == 0 {
			v = make([]byte, logUniform(20))
			fillPattern(v, rng.Uint64())
		}
		f.add(ulen, v)
	}
	f.verify()
	t.Logf("%d entries, %d bytes of usage, %d slabs", f.m.Len(), f.m.ApproximateMemoryUsage(), len(f.m.w.slabs))
}
