package filter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// policies lists every policy the shared contract tests run against.
func policies() []Policy {
	return []Policy{
		NewBloomPolicy(10),
		NewBloomPolicy(1),
		NewBloomPolicy(45),
		NewLegacyBloomPolicy(10),
		NewLegacyBloomPolicy(45),
		NewLevelDBBloomPolicy(10),
		NewLevelDBBloomPolicy(1),
		NewLevelDBBloomPolicy(45),
		NewBlockedBloomPolicy(10),
		NewBlockedBloomPolicy(1),
		NewBlockedBloomPolicy(45),
		NewBinaryFusePolicy(8),
		NewBinaryFusePolicy(16),
		None,
	}
}

func TestNamesDistinct(t *testing.T) {
	names := map[string]bool{}
	for _, p := range []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10), NewLevelDBBloomPolicy(10), NewBlockedBloomPolicy(10), NewBinaryFusePolicy(8), None} {
		if p.Name() == "" {
			t.Fatalf("%T has an empty name", p)
		}
		if names[p.Name()] {
			t.Fatalf("name %q used twice", p.Name())
		}
		names[p.Name()] = true
	}
	if got := NewBloomPolicy(10).Name(); got != BloomPolicyName {
		t.Errorf("bloom name = %q, want %q", got, BloomPolicyName)
	}
	if got := NewLevelDBBloomPolicy(10).Name(); got != "leveldb.BuiltinBloomFilter2" {
		t.Errorf("leveldb name = %q", got)
	}
	// The name does not depend on bits per key: the filter is self-describing.
	if NewBloomPolicy(3).Name() != NewBloomPolicy(20).Name() {
		t.Error("bloom name depends on bits per key")
	}
	if got := NewBlockedBloomPolicy(10).Name(); got != BlockedBloomPolicyName {
		t.Errorf("blocked bloom name = %q, want %q", got, BlockedBloomPolicyName)
	}
	if got := NewBinaryFusePolicy(16).Name(); got != BinaryFusePolicyName || got != NewBinaryFusePolicy(8).Name() {
		t.Errorf("binary fuse name = %q, want %q for both sizes (the size is in the filter)", got, BinaryFusePolicyName)
	}
}

func TestNone(t *testing.T) {
	if !IsNone(None) || None != None {
		t.Fatal("None is not None")
	}
	var p Policy = nonePolicy{}
	if p != None {
		t.Error("a nonePolicy value does not compare equal to None")
	}
	for _, q := range []Policy{nil, NewBloomPolicy(10), NewLevelDBBloomPolicy(10), NewBlockedBloomPolicy(10), NewBinaryFusePolicy(8)} {
		if IsNone(q) {
			t.Errorf("IsNone(%T) = true", q)
		}
		if q == None {
			t.Errorf("%T == None", q)
		}
	}
	b := None.NewBuilder()
	b.AddKey([]byte("a"))
	if got := b.Finish([]byte("pre")); string(got) != "pre" {
		t.Errorf("None filter = %q, want nothing appended", got)
	}
	for _, f := range [][]byte{nil, {}, {0}, {0, 0, 0, 0, 0, 0, 0, 0, 6}} {
		if !None.MayContain(f, []byte("x")) {
			t.Errorf("None.MayContain(%x) = false", f)
		}
	}
	if _, ok := None.(BitsPerKeyer); ok {
		t.Error("None implements BitsPerKeyer")
	}
	if _, ok := NewBinaryFusePolicy(8).(BitsPerKeyer); ok {
		t.Error("the binary fuse policy implements BitsPerKeyer: its size is not a bits-per-key budget")
	}
}

func TestBitsPerKeyer(t *testing.T) {
	tests := []struct {
		p        Policy
		bits, k  int
		whatName string
	}{
		{NewBloomPolicy(10), 10, 6, "bloom 10"},
		{NewBloomPolicy(0), 1, 1, "bloom 0 clamps to 1"},
		{NewBloomPolicy(-5), 1, 1, "bloom -5 clamps to 1"},
		{NewBloomPolicy(1 << 30), MaxBitsPerKey, MaxProbes, "bloom huge clamps"},
		{NewLevelDBBloomPolicy(10), 10, 6, "leveldb 10"},
		{NewLevelDBBloomPolicy(-1), 1, 1, "leveldb -1 clamps to 1"},
		{NewLevelDBBloomPolicy(20), 20, 13, "leveldb 20"},
		{NewBlockedBloomPolicy(10), 10, 6, "blocked 10"},
		{NewBlockedBloomPolicy(20), 20, 11, "blocked 20"},
		{NewBlockedBloomPolicy(-1), 1, 1, "blocked -1 clamps to 1"},
		{NewBlockedBloomPolicy(1 << 30), MaxBitsPerKey, MaxProbes, "blocked huge clamps"},
	}
	for _, tc := range tests {
		bk, ok := tc.p.(BitsPerKeyer)
		if !ok {
			t.Fatalf("%s: not a BitsPerKeyer", tc.whatName)
		}
		if bk.BitsPerKey() != tc.bits || bk.NumProbes() != tc.k {
			t.Errorf("%s: bits=%d k=%d, want %d %d", tc.whatName, bk.BitsPerKey(), bk.NumProbes(), tc.bits, tc.k)
		}
	}
}

// TestContract checks, for every policy, that added keys are always found,
// that Finish appends without touching dst's prefix, and that a builder
// reused after Finish builds exactly what a fresh builder builds.
func TestContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range policies() {
		t.Run(fmt.Sprintf("%s/%v", p.Name(), bitsOf(p)), func(t *testing.T) {
			reused := p.NewBuilder()
			for round, n := range []int{0, 1, 2, 7, 100, 5000} {
				keys := make([][]byte, n)
				for i := range keys {
					keys[i] = randKey(rng)
				}
				prefix := []byte(fmt.Sprintf("prefix-%d", round))
				dst := append(make([]byte, 0, len(prefix)+3), prefix...)

				for _, k := range keys {
					// A caller may reuse its key buffer: the builder must
					// not retain it.
					buf := append([]byte(nil), k...)
					reused.AddKey(buf)
					for i := range buf {
						buf[i] ^= 0xff
					}
				}
				out := reused.Finish(dst)
				if !bytes.Equal(out[:len(prefix)], prefix) {
					t.Fatalf("n=%d: prefix clobbered: %q", n, out[:len(prefix)])
				}
				f := out[len(prefix):]

				fresh := p.NewBuilder()
				for _, k := range keys {
					fresh.AddKey(k)
				}
				if want := fresh.Finish(nil); !bytes.Equal(f, want) {
					t.Fatalf("n=%d: reused builder made %x, fresh builder %x", n, f, want)
				}
				for _, k := range keys {
					if !p.MayContain(f, k) {
						t.Fatalf("n=%d: false negative for %q", n, k)
					}
				}
				if IsNone(p) {
					if len(f) != 0 {
						t.Fatalf("None wrote a %d-byte filter", len(f))
					}
					continue
				}
				// Finish reset the builder: an immediate Finish is the
				// filter of no keys, which holds nothing.
				empty := reused.Finish(nil)
				if got := emptyFilter(p); !bytes.Equal(empty, got) {
					t.Fatalf("n=%d: Finish after Finish = %x, want empty filter %x", n, empty, got)
				}
			}
		})
	}
}

func bitsOf(p Policy) int {
	if bk, ok := p.(BitsPerKeyer); ok {
		return bk.BitsPerKey()
	}
	return 0
}

func emptyFilter(p Policy) []byte { return p.NewBuilder().Finish(nil) }

func randKey(rng *rand.Rand) []byte {
	k := make([]byte, rng.IntN(24))
	for i := range k {
		k[i] = byte(rng.Uint32())
	}
	return k
}

// TestEmptyFilterMatchesNothing: a filter built from no keys (all zero
// bits, or a binary fuse filter of no slots) matches no key.
func TestEmptyFilterMatchesNothing(t *testing.T) {
	emptySize := map[string]int{
		BloomPolicyName:        64/8 + 1,
		LegacyBloomPolicyName:  64/8 + 1,
		LevelDBBloomPolicyName: 64/8 + 1,
		BlockedBloomPolicyName: 64 + 1,
		BinaryFusePolicyName:   fuseTrailerLen,
	}
	for _, p := range policies() {
		if IsNone(p) {
			continue
		}
		f := emptyFilter(p)
		if len(f) != emptySize[p.Name()] {
			t.Errorf("%s: empty filter is %d bytes, want %d", p.Name(), len(f), emptySize[p.Name()])
		}
		for _, k := range []string{"", "hello", "world", "x"} {
			if p.MayContain(f, []byte(k)) {
				t.Errorf("%s: empty filter matches %q", p.Name(), k)
			}
		}
	}
}

// TestUnreadableFiltersMayContain: empty, too short, k byte 0 or > MaxProbes
// all answer true (a damaged filter costs a read, never a key), and every
// prefix of a real filter and random garbage never panic.
func TestUnreadableFiltersMayContain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10), NewLevelDBBloomPolicy(10)} {
		t.Run(p.Name(), func(t *testing.T) {
			key := []byte("hello")
			cases := map[string][]byte{
				"nil":       nil,
				"empty":     {},
				"one byte":  {6},
				"one zero":  {0},
				"k=0":       {0, 0, 0, 0, 0, 0, 0, 0, 0},
				"k=31":      {0, 0, 0, 0, 0, 0, 0, 0, 31},
				"k=255":     {0, 0, 0, 0, 0, 0, 0, 0, 255},
				"short k31": {0, 31},
			}
			for name, f := range cases {
				if !p.MayContain(f, key) {
					t.Errorf("%s: MayContain = false", name)
				}
			}

			b := p.NewBuilder()
			for i := 0; i < 200; i++ {
				b.AddKey([]byte(fmt.Sprint("key", i)))
			}
			f := b.Finish(nil)
			for i := 0; i <= len(f); i++ {
				trunc := f[:i]
				got := p.MayContain(trunc, key)
				if (i < 2 || trunc[i-1] > MaxProbes || trunc[i-1] == 0) && !got {
					t.Fatalf("prefix %x: MayContain = false", trunc)
				}
			}

			for i := 0; i < 20000; i++ {
				g := make([]byte, rng.IntN(80))
				for j := range g {
					g[j] = byte(rng.Uint32())
				}
				got := p.MayContain(g, randKey(rng))
				if (len(g) < 2 || g[len(g)-1] > MaxProbes || g[len(g)-1] == 0) && !got {
					t.Fatalf("garbage %x: MayContain = false", g)
				}
			}
		})
	}
}

func TestMayContainDoesNotAllocate(t *testing.T) {
	for _, p := range []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10), NewLevelDBBloomPolicy(10), NewBlockedBloomPolicy(10),
		NewBinaryFusePolicy(8), NewBinaryFusePolicy(16), None} {
		b := p.NewBuilder()
		for i := 0; i < 1000; i++ {
			b.AddKey([]byte(fmt.Sprint(i)))
		}
		f := b.Finish(nil)
		key := []byte("some absent key")
		if n := testing.AllocsPerRun(100, func() { p.MayContain(f, key) }); n != 0 {
			t.Errorf("%s: MayContain allocates %.1f times", p.Name(), n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p  Policy
		ok bool
	}{
		{NewBloomPolicy(10), true}, {NewBloomPolicy(0), true}, {NewBloomPolicy(-1), false},
		{NewLevelDBBloomPolicy(10), true}, {NewLevelDBBloomPolicy(-3), false}, {None, true},
		{NewBlockedBloomPolicy(10), true}, {NewBlockedBloomPolicy(-1), false},
		{NewBinaryFusePolicy(8), true}, {NewBinaryFusePolicy(16), true}, {NewBinaryFusePolicy(12), false},
	} {
		if err := Validate(tc.p); (err == nil) != tc.ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", tc.p.Name(), err, tc.ok)
		}
	}
}

// TestMayContainBatch checks that MayContainBatch answers exactly as
// MayContain for every policy, on filters of many sizes and probe counts,
// for batches longer and shorter than the batch's internal chunk, with
// keys present and absent, against one filter and against several filters
// (and unreadable ones) mixed in one batch.
func TestMayContainBatch(t *testing.T) {
	ps := []Policy{NewBloomPolicy(10), NewBloomPolicy(2), NewBloomPolicy(4), NewBloomPolicy(20),
		NewLegacyBloomPolicy(10), NewLevelDBBloomPolicy(10), NewBlockedBloomPolicy(10), NewBinaryFusePolicy(8)}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range append(ps, policies()...) {
		var all [][]byte
		for _, n := range []int{1, 10, 1000, 20000} {
			b := p.NewBuilder()
			for i := 0; i < n; i++ {
				b.AddKey([]byte(fmt.Sprintf("key%08d", 2*i)))
			}
			f := b.Finish(nil)
			all = append(all, f)
			for _, size := range []int{0, 1, 63, 64, 65, 200} {
				keys := make([][]byte, size)
				filters := make([][]byte, size)
				for i := range keys {
					keys[i] = []byte(fmt.Sprintf("key%08d", rng.IntN(2*n+2)))
					filters[i] = f
				}
				positives := checkBatch(t, p, filters, keys)
				if n >= 1000 && size >= 63 && positives == size && !IsNone(p) {
					t.Fatalf("%s, %d keys: every key of a batch of %d passed: the filter was not probed", p.Name(), n, size)
				}
			}
		}
		// Keys bound for different filters, unreadable ones among them.
		all = append(all, nil, []byte{0}, []byte{0xff, 31}, []byte{0xff, 2}, all[2][:max(len(all[2])-1, 0)])
		keys := make([][]byte, 300)
		filters := make([][]byte, len(keys))
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("key%08d", rng.IntN(2000)))
			filters[i] = all[rng.IntN(len(all))]
		}
		checkBatch(t, p, filters, keys)
	}
}

// checkBatch compares MayContainBatch with MayContain key by key and
// returns how many keys passed.
func checkBatch(t *testing.T, p Policy, filters, keys [][]byte) (positives int) {
	t.Helper()
	maybe := make([]bool, len(keys)+1)
	maybe[len(keys)] = true // past the keys: must stay as it was
	MayContainBatch(p, filters, keys, maybe)
	for i, k := range keys {
		if want := p.MayContain(filters[i], k); maybe[i] != want {
			t.Fatalf("%s, batch of %d: key %q, filter of %d bytes: MayContainBatch = %v, MayContain = %v", p.Name(), len(keys), k, len(filters[i]), maybe[i], want)
		}
		if maybe[i] {
			positives++
		}
	}
	if !maybe[len(keys)] {
		t.Fatalf("%s: MayContainBatch wrote past the keys", p.Name())
	}
	// A HashBatchPolicy answers the same from the keys' hashes.
	if hp, ok := p.(HashBatchPolicy); ok {
		hashes := make([]uint64, len(keys))
		for i, k := range keys {
			hashes[i] = hp.KeyHash(k)
		}
		// KeyHashes gives the same hashes, and writes no more of them.
		bulk := make([]uint64, len(keys)+1)
		bulk[len(keys)] = 7
		KeyHashes(hp, keys, bulk)
		for i, k := range keys {
			if bulk[i] != hashes[i] {
				t.Fatalf("%s: KeyHashes gives key %q hash %x, KeyHash %x", p.Name(), k, bulk[i], hashes[i])
			}
		}
		if bulk[len(keys)] != 7 {
			t.Fatalf("%s: KeyHashes wrote past the keys", p.Name())
		}
		hmaybe := make([]bool, len(keys)+1)
		hmaybe[len(keys)] = true
		hp.MayContainHashBatch(filters, hashes, hmaybe)
		for i, k := range keys {
			if hmaybe[i] != maybe[i] {
				t.Fatalf("%s, batch of %d: key %q: MayContainHashBatch = %v, MayContainBatch = %v", p.Name(), len(keys), k, hmaybe[i], maybe[i])
			}
		}
		if !hmaybe[len(keys)] {
			t.Fatalf("%s: MayContainHashBatch wrote past the keys", p.Name())
		}
		// MayContainHashBatchOf answers the same with the filters named
		// by index: here in a table holding each distinct filter twice,
		// the keys alternating between the copies. Through the interface
		// alone (plainHash hides the Bloom policies' own batch), it
		// gathers the filters and answers the same again.
		at := map[string]int{}
		var shared [][]byte
		which := make([]uint8, len(keys))
		for i, f := range filters {
			j, ok := at[string(f)]
			if !ok {
				j = len(shared)
				at[string(f)] = j
				shared = append(shared, f, f)
			}
			which[i] = uint8(j + i%2)
		}
		if len(shared) > 256 {
			t.Fatalf("%d distinct filters: more than MayContainHashBatchOf can name", len(shared)/2)
		}
		for _, of := range []HashBatchPolicy{hp, plainHash{hp}} {
			clear(hmaybe)
			hmaybe[len(keys)] = true
			MayContainHashBatchOf(of, shared, which, hashes, hmaybe)
			for i, k := range keys {
				if hmaybe[i] != maybe[i] {
					t.Fatalf("%s (%T), batch of %d: key %q: MayContainHashBatchOf = %v, MayContainBatch = %v", p.Name(), of, len(keys), k, hmaybe[i], maybe[i])
				}
			}
			if !hmaybe[len(keys)] {
				t.Fatalf("%s: MayContainHashBatchOf wrote past the keys", p.Name())
			}
		}
	}
	return positives
}

// plainHash is a HashBatchPolicy with only the interface's methods.
type plainHash struct{ HashBatchPolicy }

// TestHashBatchPolicies checks which policies hash a key once for all
// their filters: the standard and legacy Bloom policies do (checkBatch
// compares their hashed probes with MayContain).
func TestHashBatchPolicies(t *testing.T) {
	for _, p := range []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10)} {
		if _, ok := p.(HashBatchPolicy); !ok {
			t.Errorf("%s is not a HashBatchPolicy", p.Name())
		}
	}
}

// TestKeyHashIsXXHash64 checks KeyHashIsXXHash64 against the hashes: for
// every policy it names, KeyHash is xxhash64 of the key (package db's
// MultiGet probes those policies' filters with the memtables' hashes), and
// a HashBatchPolicy whose KeyHash differs is not named.
func TestKeyHashIsXXHash64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	named := 0
	for _, p := range policies() {
		hp, ok := p.(HashBatchPolicy)
		if !ok || !KeyHashIsXXHash64(hp) {
			continue
		}
		named++
		for i := 0; i < 200; i++ {
			k := make([]byte, rng.IntN(40))
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			if got, want := hp.KeyHash(k), xxhash.Sum64(k); got != want {
				t.Fatalf("%s: KeyHash(%x) = %x, xxhash64 %x", p.Name(), k, got, want)
			}
		}
	}
	if named == 0 {
		t.Fatal("no policy has xxhash64 key hashes")
	}
	if KeyHashIsXXHash64(otherHash{NewBloomPolicy(10).(HashBatchPolicy)}) {
		t.Fatal("a wrapper with another KeyHash is named")
	}
}

// otherHash is a HashBatchPolicy with a KeyHash of its own.
type otherHash struct{ HashBatchPolicy }

func (o otherHash) KeyHash(k []byte) uint64 { return o.HashBatchPolicy.KeyHash(k) ^ 1 }
