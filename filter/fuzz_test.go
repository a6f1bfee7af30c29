package filter

import "testing"

// fuzzSeeds are filters and keys shared by both fuzz targets: real filters,
// the edge lengths, and k bytes at and past the limits.
func fuzzSeeds(f *testing.F, p Policy) {
	b := p.NewBuilder()
	b.AddKey([]byte("hello"))
	b.AddKey([]byte("world"))
	real := b.Finish(nil)
	f.Add(real, []byte("hello"))
	f.Add(real, []byte("x"))
	f.Add(real[:len(real)-1], []byte("hello"))
	f.Add([]byte{}, []byte("hello"))
	f.Add([]byte{6}, []byte(""))
	f.Add([]byte{0xff, 30}, []byte("k"))
	f.Add([]byte{0xff, 31}, []byte("k"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte("zero k"))
}

// checkMayContain runs the properties every policy keeps on arbitrary input:
// no panic, true for unreadable filters, and no false negative for key in a
// filter built from it.
func checkMayContain(t *testing.T, p Policy, filter, key []byte) {
	got := p.MayContain(filter, key)
	n := len(filter)
	if (n < 2 || filter[n-1] == 0 || filter[n-1] > MaxProbes) && !got {
		t.Fatalf("unreadable filter %x: MayContain = false", filter)
	}
	b := p.NewBuilder()
	b.AddKey(filter)
	b.AddKey(key)
	built := b.Finish(nil)
	if !p.MayContain(built, key) || !p.MayContain(built, filter) {
		t.Fatalf("false negative in filter %x built from %q and %q", built, filter, key)
	}
	// MayContainBatch answers as MayContain does, key by key.
	keys := [][]byte{key, filter, []byte("x"), key, filter}
	filters := [][]byte{filter, built, built, built, filter}
	var maybe [5]bool
	MayContainBatch(p, filters, keys, maybe[:])
	for i, k := range keys {
		if maybe[i] != p.MayContain(filters[i], k) {
			t.Fatalf("filter %x, key %q: MayContainBatch = %v, MayContain = %v", filters[i], k, maybe[i], !maybe[i])
		}
	}
	if hp, ok := p.(HashBatchPolicy); ok {
		var hashes [5]uint64
		for i, k := range keys {
			hashes[i] = hp.KeyHash(k)
		}
		var hmaybe [5]bool
		hp.MayContainHashBatch(filters, hashes[:], hmaybe[:])
		if hmaybe != maybe {
			t.Fatalf("filter %x, key %q: MayContainHashBatch %v, MayContainBatch %v", filter, key, hmaybe, maybe)
		}
	}
}

func FuzzBloomMayContain(f *testing.F) {
	p, legacy := NewBloomPolicy(10), NewLegacyBloomPolicy(10)
	fuzzSeeds(f, p)
	fuzzSeeds(f, legacy)
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		checkMayContain(t, p, filter, key)
		checkMayContain(t, legacy, filter, key)
	})
}

func FuzzLevelDBMayContain(f *testing.F) {
	p := NewLevelDBBloomPolicy(10)
	fuzzSeeds(f, p)
	f.Fuzz(func(t *testing.T, filter, key []byte) { checkMayContain(t, p, filter, key) })
}
