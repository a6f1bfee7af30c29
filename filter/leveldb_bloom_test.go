package filter

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

// TestLevelDBHash checks levelDBHash against the vectors of LevelDB's
// util/hash_test.cc.
func TestLevelDBHash(t *testing.T) {
	data5 := make([]byte, 48)
	data5[0], data5[1] = 0x01, 0xc0
	data5[16] = 0x14
	data5[22] = 0x04
	data5[27] = 0x14
	data5[31] = 0x18
	data5[32] = 0x28
	data5[40] = 0x02
	tests := []struct {
		data []byte
		seed uint32
		want uint32
	}{
		{nil, 0xbc9f1d34, 0xbc9f1d34},
		{[]byte{0x62}, 0xbc9f1d34, 0xef1345c4},
		{[]byte{0xc3, 0x97}, 0xbc9f1d34, 0x5b663814},
		{[]byte{0xe2, 0x99, 0xa5}, 0xbc9f1d34, 0x323c078f},
		{[]byte{0xe1, 0x80, 0xb9, 0x32}, 0xbc9f1d34, 0xed21633a},
		{data5, 0x12345678, 0xf333dabb},
	}
	for _, tc := range tests {
		if got := levelDBHash(tc.data, tc.seed); got != tc.want {
			t.Errorf("Hash(%x, %#x) = %#x, want %#x", tc.data, tc.seed, got, tc.want)
		}
	}
}

// fnv64a is the checksum the golden table below records for long filters.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func key32(i int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(i)) }

// TestLevelDBGolden compares filters with ones LevelDB 1.23 built itself
// (leveldb::NewBloomFilterPolicy(bpk)->CreateFilter on the same keys, run
// once by hand with Debian's libleveldb-dev): the full bytes for small
// filters, length and FNV-1a 64 of the bytes for large ones.
func TestLevelDBGolden(t *testing.T) {
	keyStrings := func(ks ...string) [][]byte {
		out := make([][]byte, len(ks))
		for i, k := range ks {
			out[i] = []byte(k)
		}
		return out
	}
	var key100, odd25, odd13 [][]byte
	for i := 0; i < 100; i++ {
		key100 = append(key100, key32(i))
	}
	for i := 0; i < 25; i++ {
		odd25 = append(odd25, key32(i*31))
	}
	for i := 0; i < 13; i++ {
		odd13 = append(odd13, []byte(strings.Repeat("x", i)))
	}
	small := []struct {
		name string
		bpk  int
		keys [][]byte
		hex  string
	}{
		{"empty", 10, nil, "000000000000000006"},
		{"hello world", 10, keyStrings("hello", "world"), "114000414410401006"},
		{"duplicates", 10, keyStrings("a", "a", "b", "a", "", "\xff\xfe\x80", "b"), "511895b00a0033901006"},
		{"25 keys at 3 bits", 3, odd25, "d2e31cba14e49708a29102"},
		{"13 keys at 7 bits", 7, odd13, "58523e2beb1040a07477903004"},
		{"100 keys", 10, key100, "036a846c45c9e794340dbc196936ca46232007a9233719c78468468c807e4f5b19a0059cb78522408a666dbbc326bce0400ee4bb1445cb2872d6f4cea076c44034646fadb5790d555cf6d92814c1e9800b2ceb32876168d67b8b43a28ca95764c10ce3dce844676f98af5a480e70832b105826a4c8b3a21532201e38fe06"},
	}
	for _, tc := range small {
		b := NewLevelDBBloomPolicy(tc.bpk).NewBuilder()
		for _, k := range tc.keys {
			b.AddKey(k)
		}
		if got := hex.EncodeToString(b.Finish(nil)); got != tc.hex {
			t.Errorf("%s: got  %s\nwant %s", tc.name, got, tc.hex)
		}
	}

	// 1000 keys "key-<i*7919>" at many budgets: exercises LevelDB's float k.
	large := []struct {
		bpk, n int
		len    int
		fnv    uint64
	}{
		{1, 1000, 126, 0x8f16133ed741af1f},
		{2, 1000, 251, 0x12249a5597660c44},
		{3, 1000, 376, 0x735038ceece4eef0},
		{5, 1000, 626, 0x90fe5167f1e8daa9},
		{7, 1000, 876, 0x717fed49a63f009d},
		{9, 1000, 1126, 0x08779f4a02bd0cbb},
		{10, 1000, 1251, 0x3a85de1d731d1ed6},
		{16, 1000, 2001, 0xa273ca06673727cc},
		{20, 1000, 2501, 0xce4ac03b060c5769},
		{31, 1000, 3876, 0x9f393d1973858aed},
		{43, 1000, 5376, 0xbfbbc3258f8995dc},
		{44, 1000, 5501, 0x28a193494ea3c453},
		{45, 1000, 5626, 0x489cbd824a37443a},
		{50, 1000, 6251, 0x78550533752dc459},
		{100, 1000, 12501, 0x882d2a6991504119},
		{200, 1000, 25001, 0x666e464b5bd0bbf0},
		{1024, 1000, 128001, 0x95e024d1af96f30f},
		{10, 100000, 125001, 0x672baa75c8700cda}, // keys "%016d" of 0..99999
	}
	for _, tc := range large {
		b := NewLevelDBBloomPolicy(tc.bpk).NewBuilder()
		for i := 0; i < tc.n; i++ {
			if tc.n == 100000 {
				b.AddKey(appendKey16(nil, uint64(i)))
			} else {
				b.AddKey([]byte("key-" + strconv.Itoa(i*7919)))
			}
		}
		f := b.Finish(nil)
		if len(f) != tc.len || fnv64a(f) != tc.fnv {
			t.Errorf("bpk=%d n=%d: len %d fnv %#016x, want len %d fnv %#016x", tc.bpk, tc.n, len(f), fnv64a(f), tc.len, tc.fnv)
		}
	}
}

// TestLevelDBK: k is LevelDB's truncated float64 product, clamped to
// [1,30]; for 1..45 it equals the exact floor(0.69*b).
func TestLevelDBK(t *testing.T) {
	for b := 1; b <= 45; b++ {
		want := min(max(69*b/100, 1), 30)
		if got := NewLevelDBBloomPolicy(b).(BitsPerKeyer).NumProbes(); got != want {
			t.Errorf("b=%d: k=%d, want %d", b, got, want)
		}
	}
}

// TestLevelDBSmall is bloom_test.cc's Small: two keys, found; two others
// (which happen to miss in LevelDB too), not.
func TestLevelDBSmall(t *testing.T) {
	p := NewLevelDBBloomPolicy(10)
	b := p.NewBuilder()
	b.AddKey([]byte("hello"))
	b.AddKey([]byte("world"))
	f := b.Finish(nil)
	for k, want := range map[string]bool{"hello": true, "world": true, "x": false, "foo": false} {
		if got := p.MayContain(f, []byte(k)); got != want {
			t.Errorf("MayContain(%q) = %v, want %v", k, got, want)
		}
	}
}

// nextLength is the length schedule of bloom_test.cc's VaryingLengths.
func nextLength(n int) int {
	switch {
	case n < 10:
		return n + 1
	case n < 100:
		return n + 10
	case n < 1000:
		return n + 100
	default:
		return n + 1000
	}
}

// TestLevelDBVaryingLengths is bloom_test.cc's VaryingLengths, run for both
// Bloom policies: filters of 1..10000 four-byte keys at 10 bits per key have
// no false negatives, at most n*10/8+40 bytes, a rate of at most 2% over
// 10000 absent keys, and few "mediocre" filters (rate above 1.25%).
func TestLevelDBVaryingLengths(t *testing.T) {
	for _, p := range []Policy{NewLevelDBBloomPolicy(10), NewBloomPolicy(10)} {
		mediocre, good := 0, 0
		for n := 1; n <= 10000; n = nextLength(n) {
			b := p.NewBuilder()
			for i := 0; i < n; i++ {
				b.AddKey(key32(i))
			}
			f := b.Finish(nil)
			if len(f) > n*10/8+40 {
				t.Errorf("%s n=%d: %d bytes > %d", p.Name(), n, len(f), n*10/8+40)
			}
			for i := 0; i < n; i++ {
				if !p.MayContain(f, key32(i)) {
					t.Fatalf("%s n=%d: false negative for key %d", p.Name(), n, i)
				}
			}
			hits := 0
			for i := 0; i < 10000; i++ {
				if p.MayContain(f, key32(i+1000000000)) {
					hits++
				}
			}
			rate := float64(hits) / 10000
			if rate > 0.02 {
				t.Errorf("%s n=%d: fpr %.2f%% > 2%%", p.Name(), n, 100*rate)
			}
			if rate > 0.0125 {
				mediocre++
			} else {
				good++
			}
		}
		t.Logf("%s: %d good, %d mediocre filters", p.Name(), good, mediocre)
		if mediocre > good/5 {
			t.Errorf("%s: %d mediocre filters for %d good", p.Name(), mediocre, good)
		}
	}
}
