package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// keyAlphabet makes short random keys collide often and includes zero and
// 0xff bytes, so prefixes, empty keys and embedded zeros are all exercised.
var keyAlphabet = []byte{0x00, 0x01, 'a', 'b', 0xff}

func randKey(rng *rand.Rand, maxLen int) []byte {
	k := make([]byte, rng.Intn(maxLen+1))
	for i := range k {
		k[i] = keyAlphabet[rng.Intn(len(keyAlphabet))]
	}
	return k
}

func randKind(rng *rand.Rand) base.Kind {
	if rng.Intn(4) == 0 {
		return base.KindDelete
	}
	return base.KindSet
}

// randProbe returns a seek key: usually well-formed with a random user key,
// sequence and kind; sometimes shorter than a trailer.
func randProbe(rng *rand.Rand, maxSeq uint64) []byte {
	if rng.Intn(20) == 0 {
		return randKey(rng, base.TrailerLen-1)
	}
	return base.MakeInternalKey(randKey(rng, 4), uint64(rng.Int63n(int64(maxSeq+2))), base.Kind(rng.Intn(2)))
}

func TestEmpty(t *testing.T) {
	m := New()
	if !m.Empty() || m.Len() != 0 || m.ApproximateMemoryUsage() != 0 {
		t.Fatalf("new memtable: Empty=%v Len=%d usage=%d", m.Empty(), m.Len(), m.ApproximateMemoryUsage())
	}
	if _, _, found := m.Get(nil, base.MaxSeqNum); found {
		t.Fatal("Get found an entry in an empty memtable")
	}
	it := m.NewIterator()
	for name, ok := range map[string]bool{
		"First":  it.First(),
		"Last":   it.Last(),
		"SeekGE": it.SeekGE(base.MakeSeekKey(nil, base.MaxSeqNum)),
		"SeekLT": it.SeekLT(base.MakeSeekKey([]byte("\xff\xff"), 0)),
	} {
		if ok {
			t.Errorf("%s on an empty memtable returned true", name)
		}
	}
	if it.Valid() || it.Key() != nil || it.Value() != nil || it.Error() != nil || it.Close() != nil {
		t.Fatal("invalid iterator misbehaves")
	}
}

func TestGetSnapshots(t *testing.T) {
	m := New()
	m.Add(5, base.KindSet, []byte("k"), []byte("v5"))
	m.Add(8, base.KindDelete, []byte("k"), nil)
	m.Add(12, base.KindSet, []byte("k"), []byte("v12"))
	// Neighbours that share a prefix with "k" must not leak into its answers.
	m.Add(3, base.KindSet, []byte(""), []byte("empty"))
	m.Add(4, base.KindSet, []byte("k\x00"), []byte("k0"))
	m.Add(6, base.KindSet, []byte("j\xff"), []byte("j"))

	for _, tc := range []struct {
		key   string
		seq   uint64
		found bool
		kind  base.Kind
		value string
	}{
		{"k", 0, false, 0, ""},
		{"k", 4, false, 0, ""},
		{"k", 5, true, base.KindSet, "v5"},
		{"k", 7, true, base.KindSet, "v5"},
		{"k", 8, true, base.KindDelete, ""},
		{"k", 11, true, base.KindDelete, ""},
		{"k", 12, true, base.KindSet, "v12"},
		{"k", base.MaxSeqNum, true, base.KindSet, "v12"},
		{"k", ^uint64(0), true, base.KindSet, "v12"}, // clamped to MaxSeqNum
		{"", 2, false, 0, ""},
		{"", 3, true, base.KindSet, "empty"},
		{"k\x00", 100, true, base.KindSet, "k0"},
		{"k\x00", 3, false, 0, ""},
		{"k\x00\x00", 100, false, 0, ""},
		{"j", 100, false, 0, ""},
		{"j\xff", 100, true, base.KindSet, "j"},
		{"\x00", 100, false, 0, ""},
		{"l", 100, false, 0, ""},
	} {
		v, kind, found := m.Get([]byte(tc.key), tc.seq)
		if found != tc.found || kind != tc.kind || string(v) != tc.value {
			t.Errorf("Get(%q, %d) = %q, %v, %v; want %q, %v, %v", tc.key, tc.seq, v, kind, found, tc.value, tc.kind, tc.found)
		}
	}
}

func TestEdgeKeysOrder(t *testing.T) {
	m := New()
	var md model
	keys := []string{"", "\x00", "\x00\x00", "\x00\x01", "a", "a\x00", "a\x00\x00", "\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	seq := uint64(0)
	// Insert in reverse and with several versions each, including seq 0 and
	// the largest sequence number.
	for i := len(keys) - 1; i >= 0; i-- {
		for v := 0; v < 3; v++ {
			s := seq
			if i == 0 && v == 2 {
				s = base.MaxSeqNum
			}
			kind := base.Kind(v % 2)
			val := []byte(keys[i] + "=" + string(rune('0'+v)))
			m.Add(s, kind, []byte(keys[i]), val)
			md.add(s, kind, []byte(keys[i]), val)
			seq++
		}
	}
	checkFull(t, m, &md)
	// The empty key with the largest sequence number is the very first entry.
	it := m.NewIterator()
	if !it.First() || !bytes.Equal(it.Key(), base.MakeInternalKey(nil, base.MaxSeqNum, base.KindDelete)) {
		t.Fatalf("first entry %s", fmtKey(it.Key()))
	}
}

// TestModel inserts thousands of random entries and compares every read
// operation with a sorted-slice model at several sizes.
func TestModel(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		rng := rand.New(rand.NewSource(seed))
		const n = 4000
		seqs := rng.Perm(n) // unique sequence numbers in random order
		m := New()
		var md model
		check := map[int]bool{1: true, 10: true, 100: true, 1000: true, n: true}
		for i := 0; i < n; i++ {
			seq := uint64(seqs[i])
			ukey := randKey(rng, 6)
			kind := randKind(rng)
			var val []byte
			if kind == base.KindSet {
				val = make([]byte, rng.Intn(40))
				rng.Read(val)
			}
			m.Add(seq, kind, ukey, val)
			md.add(seq, kind, ukey, val)
			if check[i+1] {
				checkFull(t, m, &md)
				checkSeeks(t, rng, m, &md, n)
				checkGets(t, rng, m, &md, n)
			}
		}
	}
}

func checkSeeks(t *testing.T, rng *rand.Rand, m *MemTable, md *model, maxSeq uint64) {
	t.Helper()
	it := m.NewIterator()
	for p := 0; p < 500; p++ {
		probe := randProbe(rng, maxSeq)
		var i int
		var ok bool
		if rng.Intn(2) == 0 {
			i, ok = md.seekGE(probe), it.SeekGE(probe)
		} else {
			i, ok = md.seekGE(probe)-1, it.SeekLT(probe)
		}
		if err := checkPos(md, it, ok, i); err != nil {
			t.Fatalf("seek %q: %v", probe, err)
		}
		// Wander from there.
		for s := 0; s < 8 && it.Valid(); s++ {
			if rng.Intn(2) == 0 {
				i, ok = i+1, it.Next()
			} else {
				i, ok = i-1, it.Prev()
			}
			if err := checkPos(md, it, ok, i); err != nil {
				t.Fatalf("after seek %q, step %d: %v", probe, s, err)
			}
		}
	}
}

func checkGets(t *testing.T, rng *rand.Rand, m *MemTable, md *model, maxSeq uint64) {
	t.Helper()
	for p := 0; p < 1000; p++ {
		ukey := randKey(rng, 6)
		if len(md.ents) > 0 && rng.Intn(2) == 0 {
			ukey = base.UserKey(md.ents[rng.Intn(len(md.ents))].ikey)
		}
		seq := uint64(rng.Int63n(int64(maxSeq + 2)))
		if rng.Intn(50) == 0 {
			seq = base.MaxSeqNum + uint64(rng.Intn(3))
		}
		v, k, f := m.Get(ukey, seq)
		wv, wk, wf := md.get(ukey, seq)
		if f != wf || k != wk || !bytes.Equal(v, wv) {
			t.Fatalf("Get(%q, %d) = %q, %v, %v; want %q, %v, %v", ukey, seq, v, k, f, wv, wk, wf)
		}
	}
}

// TestAddCopies checks that Add copies its inputs and that returned slices
// are clipped: appending to them cannot overwrite a neighbour.
func TestAddCopies(t *testing.T) {
	m := New()
	k, v := []byte("key1"), []byte("value1")
	m.Add(1, base.KindSet, k, v)
	m.Add(2, base.KindSet, []byte("key2"), []byte("value2"))
	copy(k, "XXXX")
	copy(v, "YYYYYY")
	got, _, found := m.Get([]byte("key1"), 10)
	if !found || string(got) != "value1" {
		t.Fatalf("Get(key1) = %q, %v after mutating Add's inputs", got, found)
	}
	if cap(got) != len(got) {
		t.Fatalf("value capacity %d > length %d", cap(got), len(got))
	}
	_ = append(got, "clobber"...)
	it := m.NewIterator()
	it.First()
	if ik := it.Key(); cap(ik) != len(ik) {
		t.Fatalf("key capacity %d > length %d", cap(ik), len(ik))
	}
	if !it.Next() || string(base.UserKey(it.Key())) != "key2" || string(it.Value()) != "value2" {
		t.Fatalf("neighbour damaged: %s = %q", fmtKey(it.Key()), it.Value())
	}
}

func TestLargeValues(t *testing.T) {
	sizes := []int{0, 1, 100, minSlabSize/4 - 20, minSlabSize/4 - 19, minSlabSize / 4, 300 << 10, maxSlabSize, 16 << 20}
	m := New()
	var md model
	rng := rand.New(rand.NewSource(7))
	seq := uint64(1)
	for i, sz := range sizes {
		// A small neighbour around each large value.
		m.Add(seq, base.KindSet, []byte{byte(i), 0}, []byte("small"))
		md.add(seq, base.KindSet, []byte{byte(i), 0}, []byte("small"))
		seq++
		v := make([]byte, sz)
		fillPattern(v, rng.Uint64())
		m.Add(seq, base.KindSet, []byte{byte(i)}, v)
		md.add(seq, base.KindSet, []byte{byte(i)}, v)
		seq++
	}
	checkFull(t, m, &md)
	total := 0
	for i, sz := range sizes {
		got, kind, found := m.Get([]byte{byte(i)}, seq)
		want, _, _ := md.get([]byte{byte(i)}, seq)
		if !found || kind != base.KindSet || len(got) != sz || !bytes.Equal(got, want) {
			t.Fatalf("value of size %d: found=%v len=%d", sz, found, len(got))
		}
		total += sz + 1 + base.TrailerLen + len("small") + 2 + base.TrailerLen
	}
	if u := m.ApproximateMemoryUsage(); u < total || u > total+len(sizes)*2*maxOverhead {
		t.Fatalf("ApproximateMemoryUsage = %d, entry bytes = %d", u, total)
	}
}

// Per-entry bytes beyond key, trailer and value: a header, one to maxHeight
// links, up to 3 bytes of alignment padding.
const (
	minOverhead = hdrSize + linkSize
	maxOverhead = hdrSize + linkSize*maxHeight + 3
)

func TestMemoryUsageGrows(t *testing.T) {
	m := New()
	rng := rand.New(rand.NewSource(3))
	prev := 0
	for i := 0; i < 2000; i++ {
		k := randKey(rng, 20)
		v := make([]byte, rng.Intn(200))
		m.Add(uint64(i), base.KindSet, k, v)
		u := m.ApproximateMemoryUsage()
		if d := u - prev; d < len(k)+base.TrailerLen+len(v)+minOverhead || d > len(k)+base.TrailerLen+len(v)+maxOverhead {
			t.Fatalf("Add of %d+%d bytes grew usage by %d", len(k), len(v), d)
		}
		prev = u
	}
}

// TestHeightDistribution checks the branching factor: a quarter of towers
// reach each next level.
func TestHeightDistribution(t *testing.T) {
	m := New()
	const n = 1 << 18
	var atLeast [maxHeight + 1]int
	for i := 0; i < n; i++ {
		h := m.randomHeight()
		if h < 1 || h > maxHeight {
			t.Fatalf("height %d", h)
		}
		for j := 1; j <= h; j++ {
			atLeast[j]++
		}
	}
	for j := 2; j <= 5; j++ {
		ratio := float64(atLeast[j]) / float64(atLeast[j-1])
		if ratio < 0.23 || ratio > 0.27 {
			t.Errorf("P(h>=%d | h>=%d) = %.3f, want 0.25", j, j-1, ratio)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	m := New()
	rng := rand.New(rand.NewSource(5))
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = make([]byte, 16)
		rng.Read(keys[i])
		m.Add(uint64(i+1), base.KindSet, keys[i], make([]byte, 100))
	}
	absent := []byte("definitely-absent-key")
	seek := base.MakeSeekKey(keys[7], base.MaxSeqNum)
	it := m.NewIterator()
	for name, f := range map[string]func(){
		"GetPresent": func() { m.Get(keys[rng.Intn(len(keys))], base.MaxSeqNum) },
		"GetAbsent":  func() { m.Get(absent, base.MaxSeqNum) },
		"SeekGE":     func() { it.SeekGE(seek) },
		"SeekLTPrev": func() { it.SeekLT(seek); it.Prev() },
		"FirstNext":  func() { it.First(); it.Next(); it.Key(); it.Value() },
		"Last":       func() { it.Last() },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
}

// fillPattern fills b with cheap pseudo-random bytes.
func fillPattern(b []byte, x uint64) {
	x |= 1
	for i := range b {
		if i%8 == 0 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		b[i] = byte(x >> (i % 8 * 8))
	}
}

// TestLargeKeys covers nodes too big for a shared slab, including one larger
// than the biggest slab and one as the very first entry.
func TestLargeKeys(t *testing.T) {
	m := New()
	var md model
	rng := rand.New(rand.NewSource(9))
	for i, sz := range []int{100 << 10, 10, 2 << 20, 0, minSlabSize / 4, 300 << 10} {
		k := make([]byte, sz)
		fillPattern(k, rng.Uint64())
		for j, vsz := range []int{0, 7, 50 << 10} {
			v := bytes.Repeat([]byte{byte(i), byte(j)}, vsz/2)
			seq := uint64(i*3 + j)
			m.Add(seq, base.KindSet, k, v)
			md.add(seq, base.KindSet, k, v)
		}
	}
	checkFull(t, m, &md)
	for _, e := range md.ents {
		u, seq, _, _ := base.ParseInternalKey(e.ikey)
		if v, _, found := m.Get(u, seq); !found || !bytes.Equal(v, e.value) {
			t.Fatalf("Get(key of %d bytes, %d): found=%v len=%d, want len %d", len(u), seq, found, len(v), len(e.value))
		}
	}
}

// TestInsertOrders exercises the insertion hint with orders that keep it,
// lose it and regain it.
func TestInsertOrders(t *testing.T) {
	const n = 3000
	key := func(i int) []byte { return []byte(fmt.Sprintf("%08d", i)) }
	for _, tc := range []struct {
		name string
		at   func(i int) (ukey []byte, seq uint64)
	}{
		{"ascending", func(i int) ([]byte, uint64) { return key(i), uint64(i) }},
		{"descending", func(i int) ([]byte, uint64) { return key(n - i), uint64(i) }},
		{"same key, rising seq", func(i int) ([]byte, uint64) { return []byte("k"), uint64(i) }},
		{"same key, falling seq", func(i int) ([]byte, uint64) { return []byte("k"), uint64(n - i) }},
		{"sawtooth", func(i int) ([]byte, uint64) { return key(i%97*1000 + i), uint64(i) }},
		{"interleaved runs", func(i int) ([]byte, uint64) { return key(i%2*n + i), uint64(i) }},
		{"ascending with repeats", func(i int) ([]byte, uint64) { return key(i / 3), uint64(n - i) }},
		{"random", func(i int) ([]byte, uint64) { return key(i * 7919 % n), uint64(i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			var md model
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < n; i++ {
				k, seq := tc.at(i)
				kind := randKind(rng)
				v := []byte(fmt.Sprint(i))
				m.Add(seq, kind, k, v)
				md.add(seq, kind, k, v)
				if i%500 == 0 {
					checkStructure(t, m)
				}
			}
			checkFull(t, m, &md)
			checkGets(t, rng, m, &md, n)
		})
	}
}
