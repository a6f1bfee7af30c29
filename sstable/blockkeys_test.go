package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
)

// checkBlockKeys checks what findBlockKeys says of probe, from the index
// idx of block data, against the block's entries read one by one:
// keysPast only when every user key is below probe, keysAbsent only when
// none equals it and one is above it.
func checkBlockKeys(t testing.TB, data []byte, idx []uint64, probe []byte) blockKeysAnswer {
	t.Helper()
	var it blockIter
	if err := it.init(false, data); err != nil {
		t.Fatalf("an indexed block fails to open: %v", err)
	}
	equal, above := false, false
	for ok := it.First(); ok; ok = it.Next() {
		switch c := bytes.Compare(base.UserKey(it.Key()), probe); {
		case c == 0:
			equal = true
		case c > 0:
			above = true
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("an indexed block fails to read: %v", err)
	}
	a := findBlockKeys(idx, probe)
	switch {
	case a == keysPast && (equal || above):
		t.Fatalf("findBlockKeys(%q) = past, but the block holds it (%v) or a key above it (%v)", probe, equal, above)
	case a == keysAbsent && (equal || !above):
		t.Fatalf("findBlockKeys(%q) = absent, but the block holds it (%v) or no key above it (%v)", probe, equal, !above)
	}
	return a
}

// blockKeysProbes returns probes around the user keys of a block: each
// key, its prefixes, its extensions by 0x00 and 0xff, its neighbours in
// the last byte, and the empty key.
func blockKeysProbes(ukeys [][]byte) [][]byte {
	probes := [][]byte{nil, {}, {0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for _, k := range ukeys {
		probes = append(probes, k, append(slices.Clip(k), 0), append(slices.Clip(k), 0xff), append(slices.Clip(k), 0, 0, 0, 0, 0, 0, 0, 0, 0))
		for n := 0; n < len(k); n++ {
			probes = append(probes, k[:n])
		}
		if len(k) > 0 {
			up, down := slices.Clone(k), slices.Clone(k)
			up[len(up)-1]++
			down[len(down)-1]--
			probes = append(probes, up, down)
		}
	}
	return probes
}

// blockKeyShapes are user-key families whose windows fall in different
// places: kvbench's decimal keys, and the 15-byte keys its readmissing
// asks for; keys that share more than 8 bytes; keys shorter than 8 bytes;
// keys of zero and 0xff bytes (windows that pad with zeros); random keys.
var blockKeyShapes = map[string]func(rng *rand.Rand, i int) []byte{
	"decimal":        func(rng *rand.Rand, i int) []byte { return []byte(fmt.Sprintf("%016d", 2*i)) },
	"beyond-window":  func(rng *rand.Rand, i int) []byte { return []byte(fmt.Sprintf("tenant:aaaaaaaaaaaa%06d", 3*i)) },
	"tiny":           func(rng *rand.Rand, i int) []byte { return []byte{byte(i >> 8), byte(i)}[:1+rng.Intn(2)] },
	"zeros-and-ffff": func(rng *rand.Rand, i int) []byte { return randomUserKey(rng, 12) },
	"random": func(rng *rand.Rand, i int) []byte {
		k := make([]byte, rng.Intn(24))
		rng.Read(k)
		return k
	},
}

// blockOf builds a data block of the given user keys (sorted and made
// distinct here), each with versions versions (newest first) and values
// of vlen bytes, with restart interval ri.
func blockOf(ukeys [][]byte, versions, vlen, ri int) []byte {
	ukeys = slices.Clone(ukeys)
	slices.SortFunc(ukeys, bytes.Compare)
	ukeys = slices.CompactFunc(ukeys, bytes.Equal)
	var bb blockBuilder
	bb.restartInterval = ri
	v := bytes.Repeat([]byte{'v'}, vlen)
	for _, k := range ukeys {
		for s := versions; s > 0; s-- {
			bb.add(base.MakeInternalKey(k, uint64(s), base.KindSet), v)
		}
	}
	return bytes.Clone(bb.finish())
}

// TestBlockKeysAgainstEntries builds the index of blocks of every key
// shape, restart interval and number of versions, and checks its answer
// for probes around every key against the entries. Blocks whose entries
// are large enough must get an index, and absent keys must be told
// apart from it (so the test cannot pass by never answering).
func TestBlockKeysAgainstEntries(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for name, shape := range blockKeyShapes {
		t.Run(name, func(t *testing.T) {
			answered, indexed := 0, 0
			for iter := 0; iter < 200; iter++ {
				var ukeys [][]byte
				for i := range 1 + rng.Intn(60) {
					ukeys = append(ukeys, shape(rng, 1000*iter+i))
				}
				versions, ri := 1+rng.Intn(3)*rng.Intn(2), 1+rng.Intn(16)
				data := blockOf(ukeys, versions, 40, ri)
				idx, ok := buildBlockKeys(data, nil)
				if !ok {
					// Refused only when the index would not fit in a
					// quarter of the block, or the prefix is too long.
					distinct := slices.Clone(ukeys)
					slices.SortFunc(distinct, bytes.Compare)
					distinct = slices.CompactFunc(distinct, bytes.Equal)
					lo, hi := distinct[0], distinct[len(distinct)-1]
					cp := 0
					for cp < len(lo) && cp < len(hi) && lo[cp] == hi[cp] {
						cp++
					}
					if words := 1 + (cp+7)/8 + len(distinct)*versions; cp <= maxBlockKeysPrefix && words < len(data)/8/maxBlockKeysShare {
						t.Fatalf("no index for a block of %d entries (%d bytes, prefix %d): it fits in %d words", len(distinct)*versions, len(data), cp, words)
					}
					continue
				}
				indexed++
				for _, p := range blockKeysProbes(ukeys) {
					if checkBlockKeys(t, data, idx, p) != keysOpen {
						answered++
					}
				}
			}
			if answered == 0 || indexed < 100 {
				t.Fatalf("the index answered %d probes, of %d blocks indexed out of 200", answered, indexed)
			}
		})
	}
}

// TestBlockKeysRefused: blocks the index must not describe get none: a
// malformed one, keys too short to be internal keys, user keys out of
// order, entries too small for an index of a quarter of the block. The
// builder leaves dst as it was.
func TestBlockKeysRefused(t *testing.T) {
	good := blockOf([][]byte{[]byte("a"), []byte("b"), []byte("c")}, 1, 40, 2)
	var short blockBuilder
	short.restartInterval = 1
	short.add([]byte("ab"), bytes.Repeat([]byte{'v'}, 60))
	var unordered blockBuilder
	unordered.restartInterval = 1
	for _, k := range []string{"b", "a"} {
		unordered.add(base.MakeInternalKey([]byte(k), 1, base.KindSet), bytes.Repeat([]byte{'v'}, 60))
	}
	var prefixBroken blockBuilder // first and last share "k", a middle key does not
	prefixBroken.restartInterval = 1
	for _, k := range []string{"ka", "a", "kb"} {
		prefixBroken.add(base.MakeInternalKey([]byte(k), 1, base.KindSet), bytes.Repeat([]byte{'v'}, 60))
	}
	var keys [][]byte
	for i := range 40 {
		keys = append(keys, []byte(fmt.Sprintf("%04d", i)))
	}
	small := blockOf(keys, 1, 2, 16) // entries of about 17 bytes
	for name, data := range map[string][]byte{
		"truncated":      good[:len(good)-5],
		"empty":          {},
		"not-internal":   bytes.Clone(short.finish()),
		"out-of-order":   bytes.Clone(unordered.finish()),
		"prefix-broken":  bytes.Clone(prefixBroken.finish()),
		"small-entries":  small,
		"garbage-header": append([]byte{0xff, 0xff, 0xff}, good...),
	} {
		dst := []uint64{7}
		got, ok := buildBlockKeys(data, dst)
		if ok || !slices.Equal(got, []uint64{7}) {
			t.Errorf("%s: buildBlockKeys = %v, %v; want no index and dst unchanged", name, got, ok)
		}
	}
	if _, ok := buildBlockKeys(good, nil); !ok {
		t.Fatal("a good block gets no index")
	}
}

// TestBlockKeysGetMatchesUncached: a table read through a block cache
// (whose point lookups build and use the index) answers every Get as the
// same table read without a cache, for present keys at every snapshot,
// deleted ones and absent ones; and the cached blocks carry an index,
// charged to the cache.
func TestBlockKeysGetMatchesUncached(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for iter := 0; iter < 6; iter++ {
		m := randomModel(rng, 3000, 20, 80)
		data, _ := buildTable(t, m, WriterOptions{BlockSize: 1024, DisableCompression: iter%2 == 0})
		c := cache.New(64 << 20)
		var st ReadStats
		cached := openTable(t, data, ReaderOptions{Cache: c, FileID: 1, Stats: &st})
		plain := openTable(t, data, ReaderOptions{})
		var ukeys [][]byte
		for _, e := range m {
			ukeys = append(ukeys, base.UserKey(e.key))
		}
		probes := blockKeysProbes(ukeys[:300])
		for range 2000 {
			probes = append(probes, randomUserKey(rng, 20))
		}
		for pass := 0; pass < 2; pass++ { // the second with every block cached
			for _, p := range probes {
				for _, seq := range []uint64{base.MaxSeqNum, 500, 3, 0} {
					seek := base.MakeInternalKey(p, seq, base.KindSeek)
					v1, k1, ok1, err1 := cached.Get(seek, p)
					v2, k2, ok2, err2 := plain.Get(seek, p)
					if err1 != nil || err2 != nil || ok1 != ok2 || k1 != k2 || !bytes.Equal(v1, v2) {
						t.Fatalf("Get(%q @%d): cached %q %v %v %v, uncached %q %v %v %v", p, seq, v1, k1, ok1, err1, v2, k2, ok2, err2)
					}
				}
			}
		}
		if c.Size() == 0 {
			t.Fatal("nothing was cached")
		}
		// The absent probes' lookups of cached blocks were answered by
		// the index (a lookup that reads a block from the file builds it).
		if n := st.KeyIndexSkips.Load(); n < int64(len(probes)) {
			t.Fatalf("%d lookups answered by key indexes, want at least %d", n, len(probes))
		}
	}
}

// TestBlockAuxChargedAndRecycled: a block's Aux is charged with it, and a
// recycled Block starts with none and is charged for none.
func TestBlockAuxChargedAndRecycled(t *testing.T) {
	b := cache.Alloc(4000)
	plain := b.Charge()
	aux, ok := buildBlockKeys(blockOf([][]byte{[]byte("aaaa"), []byte("bbbb")}, 1, 60, 1), nil)
	if !ok {
		t.Fatal("no index")
	}
	b.SetAux(aux)
	if got, want := b.Charge(), plain+8*int64(cap(aux)); got != want {
		t.Fatalf("Charge with an index = %d, want %d", got, want)
	}
	b.Release()
	for range 10 {
		b2 := cache.Alloc(4000)
		if len(b2.Aux()) != 0 || b2.Charge() != plain {
			t.Fatalf("a recycled block has an index of %d words and is charged %d (%d without)", len(b2.Aux()), b2.Charge(), plain)
		}
		defer b2.Release()
	}
}

// FuzzBlockKeys: for any bytes, building the index does not panic, and
// when it succeeds its answer for any probe agrees with the entries.
func FuzzBlockKeys(f *testing.F) {
	blk, _ := seedBlock()
	f.Add(blk, []byte("key05"))
	f.Add(blockOf([][]byte{[]byte("0000000000000008"), []byte("0000000000000010")}, 2, 40, 1), []byte("000000000000001"))
	f.Add(blockOf([][]byte{[]byte("p"), []byte("p\x00"), []byte("p\x00\x00")}, 1, 40, 2), []byte("p\x00\x00\x00"))
	f.Add([]byte{0, 0, 0, 0}, []byte("x"))
	f.Fuzz(func(t *testing.T, data, probe []byte) {
		idx, ok := buildBlockKeys(data, nil)
		if !ok {
			if len(idx) != 0 {
				t.Fatalf("a refused block left %d words", len(idx))
			}
			return
		}
		if 8*len(idx) > len(data)/maxBlockKeysShare {
			t.Fatalf("an index of %d words for a block of %d bytes", len(idx), len(data))
		}
		checkBlockKeys(t, data, idx, probe)
	})
}

// TestBlockKeysBuiltForAbsentLoads: a block read into the cache for a key
// it holds gets no index (the lookup would pay for one no false positive
// may ever use), one read for a key it does not hold gets one, and
// lookups of cached blocks never build one.
func TestBlockKeysBuiltForAbsentLoads(t *testing.T) {
	m := benchModel(2000)
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 1024})
	for _, absentFirst := range []bool{false, true} {
		var st ReadStats
		r := openTable(t, data, ReaderOptions{Cache: cache.New(64 << 20), FileID: 1, Stats: &st})
		get := func(k []byte) {
			t.Helper()
			if _, _, _, err := r.Get(base.MakeInternalKey(k, base.MaxSeqNum, base.KindSeek), k); err != nil {
				t.Fatal(err)
			}
		}
		absent := func(i int) []byte { return append(slices.Clip(base.UserKey(m[i].key)), '5') }
		for i := range m {
			if absentFirst {
				get(absent(i))
			} else {
				get(base.UserKey(m[i].key))
			}
		}
		before := st.KeyIndexSkips.Load()
		for i := range m {
			get(absent(i))
		}
		skips := st.KeyIndexSkips.Load() - before
		switch {
		case absentFirst && skips < int64(len(m)):
			t.Fatalf("blocks loaded by absent keys: %d of %d absent lookups skipped", skips, len(m))
		case !absentFirst && skips != 0:
			t.Fatalf("blocks loaded by present keys: %d absent lookups skipped, want 0 (no index)", skips)
		}
	}
}
