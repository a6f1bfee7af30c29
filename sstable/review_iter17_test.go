package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
)

// r17Answer is what a point lookup returns.
type r17Answer struct {
	value []byte
	seq   uint64
	kind  base.Kind
	found bool
	err   error
}

func (a r17Answer) String() string {
	return fmt.Sprintf("{%q seq=%d kind=%d found=%v err=%v}", a.value, a.seq, a.kind, a.found, a.err)
}

func r17Same(a, b r17Answer) bool {
	return a.found == b.found && a.kind == b.kind && a.seq == b.seq && bytes.Equal(a.value, b.value) &&
		(a.err == nil) == (b.err == nil)
}

func r17Get(r *Reader, ukey []byte, seq uint64) r17Answer {
	seek := base.MakeInternalKey(ukey, seq, base.KindSeek)
	v, s, k, ok, err := r.GetEntry(seek, ukey)
	return r17Answer{v, s, k, ok, err}
}

// r17ModelGet is the answer a table holding m must give.
func r17ModelGet(m model, ukey []byte, seq uint64) r17Answer {
	i := m.seekGE(base.MakeInternalKey(ukey, seq, base.KindSeek))
	if i == len(m) {
		return r17Answer{}
	}
	k, s, kind, _ := base.ParseInternalKey(m[i].key)
	if !bytes.Equal(k, ukey) {
		return r17Answer{}
	}
	return r17Answer{value: append([]byte{}, m[i].value...), seq: s, kind: kind, found: true}
}

// r17Keys are key shapes the key index must handle: long shared prefixes
// (more than 8 and 16 bytes), keys that are prefixes of each other, empty
// keys, 0x00 and 0xff bytes, and one key with many versions.
func r17Keys(rng *rand.Rand, shape, n int) [][]byte {
	var ks [][]byte
	switch shape {
	case 0: // random, small alphabet
		for range n {
			ks = append(ks, randomUserKey(rng, 12))
		}
	case 1: // a 20-byte shared prefix, short random tails
		pre := bytes.Repeat([]byte("p"), 20)
		for range n {
			ks = append(ks, append(append([]byte{}, pre...), randomUserKey(rng, 4)...))
		}
	case 2: // chains of prefixes: "", "a", "aa", ... and "\xff", "\xff\xff", ...
		for i := range n {
			c := []byte{'a', 0x00, 0xff}[i%3]
			ks = append(ks, bytes.Repeat([]byte{c}, i/3%40))
		}
	case 3: // fixed length numbers, differing only after 12 bytes
		for range n {
			ks = append(ks, []byte(fmt.Sprintf("user00000000%010d", rng.Intn(4*n))))
		}
	case 4: // a 9-byte prefix and tails of 0..9 bytes of 0x00/0xff
		for range n {
			k := []byte("prefix-9:")
			for range rng.Intn(10) {
				k = append(k, []byte{0x00, 0xff, 0x01}[rng.Intn(3)])
			}
			ks = append(ks, k)
		}
	case 5: // a prefix of 55 to 57 bytes (the longest the index takes is 56)
		pre := bytes.Repeat([]byte{'L'}, 55+rng.Intn(3))
		for range n {
			ks = append(ks, append(append([]byte{}, pre...), randomUserKey(rng, 6)...))
		}
	}
	return ks
}

// r17Model makes a model of the user keys ks, each with 1..3 versions,
// plus one key with many versions (which spans blocks).
func r17Model(rng *rand.Rand, ks [][]byte, hot []byte, hotVersions int) model {
	seen := map[string]bool{}
	var m model
	add := func(uk []byte, seq uint64, kind base.Kind) {
		ik := base.MakeInternalKey(uk, seq, kind)
		if seen[string(ik)] {
			return
		}
		seen[string(ik)] = true
		var v []byte
		if kind == base.KindSet {
			v = []byte(fmt.Sprintf("v-%x-%d-%s", uk, seq, bytes.Repeat([]byte("x"), rng.Intn(40))))
		}
		m = append(m, kv{ik, v})
	}
	for _, k := range ks {
		for range 1 + rng.Intn(3) {
			kind := base.KindSet
			if rng.Intn(5) == 0 {
				kind = base.KindDelete
			}
			add(k, uint64(1+rng.Intn(1000)), kind)
		}
	}
	for i := range hotVersions {
		add(hot, uint64(2000+i), base.KindSet)
	}
	sort.Slice(m, func(i, j int) bool { return base.CompareInternal(m[i].key, m[j].key) < 0 })
	return m
}

// r17Probes returns the model's user keys and keys next to them.
func r17Probes(rng *rand.Rand, m model) [][]byte {
	var ps [][]byte
	for i, e := range m {
		if i%3 != 0 && i != len(m)-1 {
			continue
		}
		uk := base.UserKey(e.key)
		ps = append(ps, uk,
			append(append([]byte{}, uk...), 0x00),
			append(append([]byte{}, uk...), 0xff),
			append(append([]byte{}, uk...), 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00))
		if len(uk) > 0 {
			ps = append(ps, uk[:len(uk)-1], uk[:rng.Intn(len(uk))])
			inc := append([]byte{}, uk...)
			inc[len(inc)-1]++
			ps = append(ps, inc)
			dec := append([]byte{}, uk...)
			dec[len(dec)-1]--
			ps = append(ps, dec)
		}
	}
	ps = append(ps, nil, []byte{}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	for range 200 {
		ps = append(ps, randomUserKey(rng, 24))
	}
	return ps
}

// TestReview17GetCachedMatchesModel: a point lookup through the block
// cache (the first read builds the key index, later ones use it) answers
// as the model and as an uncached reader, for many key shapes, snapshots,
// both formats, compressed or not, mapped or not, block sizes down to one
// entry a block, and a cache smaller than a block; the cache's size
// returns to 0 once the file's blocks are evicted.
func TestReview17GetCachedMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	iters := 60
	if testing.Short() || raceEnabled {
		iters = 3
	}
	for iter := range iters {
		shape := iter % 6
		n := 50 + rng.Intn(400)
		ks := r17Keys(rng, shape, n)
		hot := ks[rng.Intn(len(ks))]
		m := r17Model(rng, ks, hot, 1+rng.Intn(150))
		wo := WriterOptions{
			BlockSize:            []int{1, 64, 256, 1024, 4096}[rng.Intn(5)],
			BlockRestartInterval: []int{1, 2, 4, 16}[rng.Intn(4)],
			DisableCompression:   rng.Intn(2) == 0,
		}
		if rng.Intn(3) == 0 {
			wo.Format = FormatLevelDB
		}
		data, _ := buildTable(t, m, wo)
		capacity := []int64{64 << 20, 1 << 10, 3 << 10, 20 << 10}[rng.Intn(4)]
		c := cache.New(capacity)
		ro := ReaderOptions{Cache: c, FileID: 7}
		if rng.Intn(2) == 0 {
			ro.Mapped = data
		}
		cached := openTable(t, data, ro)
		plain := openTable(t, data, ReaderOptions{})
		desc := fmt.Sprintf("iter %d shape %d %+v cache %d mapped %v", iter, shape, wo, capacity, ro.Mapped != nil)
		probes := r17Probes(rng, m)
		seqs := []uint64{base.MaxSeqNum, 0, 1, 500, 2000, 2050}
		for pass := range 2 {
			for _, p := range probes {
				for _, seq := range append(seqs, uint64(rng.Intn(2200))) {
					want := r17ModelGet(m, p, seq)
					got := r17Get(cached, p, seq)
					un := r17Get(plain, p, seq)
					if !r17Same(got, want) || !r17Same(un, want) {
						t.Fatalf("%s pass %d: Get(%q @%d): cached %v, uncached %v, model %v", desc, pass, p, seq, got, un, want)
					}
				}
			}
		}
		// Traced lookups go the same way.
		for _, p := range probes[:min(len(probes), 50)] {
			seek := base.MakeInternalKey(p, base.MaxSeqNum, base.KindSeek)
			v, s, k, ok, _, err := cached.GetTraced(seek, p, nil)
			want := r17ModelGet(m, p, base.MaxSeqNum)
			if got := (r17Answer{v, s, k, ok, err}); !r17Same(got, want) {
				t.Fatalf("%s: GetTraced(%q): %v, model %v", desc, p, got, want)
			}
		}
		c.EvictFile(7)
		if sz := c.Size(); sz != 0 {
			t.Fatalf("%s: cache size %d after EvictFile, want 0", desc, sz)
		}
		cached.Close()
		plain.Close()
	}
}

// TestReview17ConcurrentGetsEvictions: many goroutines look keys up in
// one table through a small cache, so blocks (and their key indexes) are
// evicted and recycled while others read them, and the file is evicted
// now and then; every answer must be the uncached reader's, and the
// cache must end empty after a last EvictFile. Run with -race.
func TestReview17ConcurrentGetsEvictions(t *testing.T) {
	rng := rand.New(rand.NewSource(171))
	ks := r17Keys(rng, 3, 3000)
	m := r17Model(rng, ks, ks[0], 300)
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 512, BlockRestartInterval: 4})
	c := cache.New(16 << 10)
	cached := openTable(t, data, ReaderOptions{Cache: c, FileID: 3})
	// A second table sharing the cache, to move blocks between classes.
	data2, _ := buildTable(t, r17Model(rng, r17Keys(rng, 1, 2000), []byte("x"), 1), WriterOptions{BlockSize: 2048})
	other := openTable(t, data2, ReaderOptions{Cache: c, FileID: 4})
	plain := openTable(t, data, ReaderOptions{})
	probes := r17Probes(rng, m)
	type q struct {
		p   []byte
		seq uint64
	}
	var qs []q
	var want []r17Answer
	for _, p := range probes {
		for _, seq := range []uint64{base.MaxSeqNum, 600, 2100} {
			qs = append(qs, q{p, seq})
			want = append(want, r17Get(plain, p, seq))
		}
	}
	rounds := 6
	if testing.Short() || raceEnabled {
		rounds = 1
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			c.EvictFile(3)
		}
	}()
	var bad atomic.Value
	var rwg sync.WaitGroup
	for g := range 8 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			lr := rand.New(rand.NewSource(int64(g)))
			for range rounds * len(qs) / 12 {
				j := lr.Intn(len(qs))
				if got := r17Get(cached, qs[j].p, qs[j].seq); !r17Same(got, want[j]) {
					bad.Store(fmt.Sprintf("Get(%q @%d) = %v, uncached %v", qs[j].p, qs[j].seq, got, want[j]))
					return
				}
				if j%7 == 0 {
					r17Get(other, qs[j].p, base.MaxSeqNum)
				}
			}
		}()
	}
	rwg.Wait()
	stop.Store(true)
	wg.Wait()
	if s := bad.Load(); s != nil {
		t.Fatal(s)
	}
	c.EvictFile(3)
	c.EvictFile(4)
	if sz := c.Size(); sz != 0 {
		t.Fatalf("cache size %d with every file evicted, want 0", sz)
	}
}

// TestReview17BlockFitsCacheWithoutIndex: a data block that fits the
// cache's shards on its own is cached by a point lookup, even when its
// key index would not fit with it: the index is an optimization of a
// cached block and must not stop the block from being cached (before the
// index, the second Get of a key found the block in the cache; here it
// reads it from the file every time).
func TestReview17BlockFitsCacheWithoutIndex(t *testing.T) {
	var m model
	for i := range 100 {
		m = append(m, kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%05d", i)), 1, base.KindSet), []byte("0123456789012345678901234567890")})
	}
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 64 << 10, DisableCompression: true})
	// An absent key of the block: its lookup builds the block's index.
	probe := []byte("key00042x")
	seek := base.MakeInternalKey(probe, base.MaxSeqNum, base.KindSeek)
	_, _, _, _, blocks, err := openTable(t, data, ReaderOptions{}).GetTraced(seek, probe, nil)
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%d blocks, %v", len(blocks), err)
	}
	b := cache.Alloc(blocks[0].DecodedSize)
	plain := b.Charge() // what the block costs without an index
	b.Release()
	// Shards (16 of them) of exactly the block's size plus a little.
	c := cache.New(16 * (plain + 64))
	var st ReadStats
	r := openTable(t, data, ReaderOptions{Cache: c, FileID: 1, Stats: &st})
	for range 3 {
		if _, _, ok, err := r.Get(seek, probe); ok || err != nil {
			t.Fatalf("Get: %v %v", ok, err)
		}
	}
	if n := st.DataBlocksRead.Load(); n != 1 {
		t.Fatalf("3 Gets of one key read its block %d times from the file (cache of %d-byte shards, block charge %d without its index, cache size now %d)",
			n, plain+64, plain, c.Size())
	}
}

// TestReview17RecycledBlockChargedForNoIndex: a block cached without a
// key index (by an iterator, or a lookup that found its key) is charged
// less than the same block with its index. A recycled cache.Block keeps the capacity of the
// index it had before (Release: b.aux[:0]), and Charge counts
// 8*cap(aux), so a block that reuses it is charged for an index it does
// not have, and, in a cache barely larger than a block, is not cached.
func TestReview17RecycledBlockChargedForNoIndex(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops values at random under the race detector")
	}
	var m model
	for i := range 100 {
		m = append(m, kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%05d", i)), 1, base.KindSet), []byte("0123456789012345678901234567890")})
	}
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 64 << 10, DisableCompression: true})
	c := cache.New(64 << 20)
	r := openTable(t, data, ReaderOptions{Cache: c, FileID: 1})
	absent := []byte("key00042x")
	if _, _, ok, err := r.Get(base.MakeInternalKey(absent, base.MaxSeqNum, base.KindSeek), absent); ok || err != nil {
		t.Fatalf("Get: %v %v", ok, err)
	}
	withIndex := c.Size()
	c.EvictFile(1) // the block, and its index's array, go back to the pool
	// A lookup that finds its key caches the block without an index.
	present := []byte("key00042")
	for range 2 {
		if _, _, ok, err := r.Get(base.MakeInternalKey(present, base.MaxSeqNum, base.KindSeek), present); !ok || err != nil {
			t.Fatalf("Get: %v %v", ok, err)
		}
	}
	got := c.Size()
	if got >= withIndex {
		t.Fatalf("a block cached without a key index is charged %d, as much as with one (%d)", got, withIndex)
	}
}

// TestReview17BlockKeysContent checks the key index buildBlockKeys makes
// word by word against one made from the entries read by a blockIter:
// the prefix is the one the block's first and last user keys share, and
// each entry's window is base.TailWindow of its user key after it. Keys
// share prefixes around 56 bytes (the longest taken) and around 8, are
// prefixes of each other, and have many versions, so an entry's shared
// bytes end inside the last key's trailer.
func TestReview17BlockKeysContent(t *testing.T) {
	rng := rand.New(rand.NewSource(1700))
	iters := 3000
	if testing.Short() || raceEnabled {
		iters = 500
	}
	built := 0
	for iter := range iters {
		pre := bytes.Repeat([]byte{'p'}, []int{0, 1, 7, 8, 9, 47, 48, 49, 55, 56, 57, 64}[rng.Intn(12)])
		var ukeys [][]byte
		for range 1 + rng.Intn(40) {
			k := append([]byte{}, pre...)
			for range rng.Intn(11) {
				k = append(k, []byte{0x00, 0x01, 'p', 'q', 0xff}[rng.Intn(5)])
			}
			ukeys = append(ukeys, k)
		}
		data := blockOf(ukeys, 1+rng.Intn(4), 20+rng.Intn(60), 1+rng.Intn(5))
		var it blockIter
		if err := it.init(false, data); err != nil {
			t.Fatal(err)
		}
		var uks [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			uks = append(uks, bytes.Clone(base.UserKey(it.Key())))
		}
		first, last := uks[0], uks[len(uks)-1]
		cp := commonPrefix(first, last)
		idx, ok := buildBlockKeys(data, nil)
		if !ok {
			// Refused only for a long prefix or small entries.
			if cp <= maxBlockKeysPrefix && 8*(1+(cp+7)/8+len(uks)) <= len(data)/maxBlockKeysShare-8 {
				t.Fatalf("iter %d: no index for a block of %d entries, %d bytes, prefix %d", iter, len(uks), len(data), cp)
			}
			continue
		}
		built++
		if int(idx[0]) != cp {
			t.Fatalf("iter %d: prefix of %d bytes, first and last share %d (%q, %q)", iter, idx[0], cp, first, last)
		}
		pw := (cp + 7) / 8
		if got := wordBytes(idx[1 : 1+pw])[:cp]; !bytes.Equal(got, first[:cp]) {
			t.Fatalf("iter %d: prefix %q, want %q", iter, got, first[:cp])
		}
		w := idx[1+pw:]
		if len(w) != len(uks) {
			t.Fatalf("iter %d: %d windows for %d entries", iter, len(w), len(uks))
		}
		for i, uk := range uks {
			if want := base.TailWindow(uk, cp); w[i] != want {
				t.Fatalf("iter %d: entry %d (%q): window %016x, want %016x", iter, i, uk, w[i], want)
			}
		}
	}
	if built < iters/4 {
		t.Fatalf("only %d of %d blocks indexed", built, iters)
	}
}
