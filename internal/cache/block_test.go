package cache

import (
	"testing"
)

func TestClassOf(t *testing.T) {
	prevIdx, prevSize := -1, 0
	for n := 0; n <= maxPooled+5000; n++ {
		idx, size := classOf(n)
		if size < n {
			t.Fatalf("classOf(%d) size %d < n", n, size)
		}
		if n > maxPooled {
			if idx != -1 || size != n {
				t.Fatalf("classOf(%d) = (%d,%d), want unpooled", n, idx, size)
			}
			continue
		}
		if idx < 0 || idx >= numClasses {
			t.Fatalf("classOf(%d) index %d outside [0,%d)", n, idx, numClasses)
		}
		if n > minPooled && float64(size-n) > float64(n)/classesPerDoubling {
			t.Fatalf("classOf(%d) size %d wastes more than 1/%d", n, size, classesPerDoubling)
		}
		// Classes grow with n, and one index always means one size.
		if idx < prevIdx || (idx == prevIdx && size != prevSize) || (idx > prevIdx && size <= prevSize) {
			t.Fatalf("classOf(%d) = (%d,%d) after (%d,%d)", n, idx, size, prevIdx, prevSize)
		}
		prevIdx, prevSize = idx, size
	}
	if prevIdx != numClasses-1 {
		t.Fatalf("last class %d, want %d", prevIdx, numClasses-1)
	}
}

// TestBlockLifetime checks that a cached block's buffer is kept until the
// last reference is released, whoever releases it last: the cache on
// eviction, or a reader that got it from Get before it was evicted.
func TestBlockLifetime(t *testing.T) {
	c := New(numShards * 4096) // each shard holds one 4 KiB block
	b := Alloc(4000)
	for i := range b.Data() {
		b.Data()[i] = byte(i)
	}
	if b.refs.Load() != 1 {
		t.Fatalf("Alloc: %d refs", b.refs.Load())
	}
	c.Set(1, 0, b)
	if b.refs.Load() != 2 {
		t.Fatalf("after Set: %d refs, want 2 (caller and cache)", b.refs.Load())
	}
	b.Release()
	got, ok := c.Get(1, 0)
	if !ok || got != b || b.refs.Load() != 2 {
		t.Fatalf("Get: ok=%v same=%v refs=%d", ok, got == b, b.refs.Load())
	}
	// Evict it by filling its shard with another block.
	s := c.shardFor(1, 0)
	var o uint64 = 1
	for c.shardFor(1, o) != s {
		o++
	}
	other := Alloc(4000)
	c.Set(1, o, other)
	other.Release()
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("block not evicted")
	}
	if b.refs.Load() != 1 {
		t.Fatalf("after eviction: %d refs, want 1 (the reader's)", b.refs.Load())
	}
	for i, x := range got.Data() {
		if x != byte(i) {
			t.Fatalf("evicted block changed under its reader at byte %d", i)
		}
	}
	got.Release()
	if b.refs.Load() != 0 || b.data != nil {
		t.Fatalf("after last release: %d refs", b.refs.Load())
	}

	// EvictFile and replacement drop the cache's reference too.
	x := Alloc(100)
	c.Set(5, 0, x)
	c.EvictFile(5)
	if x.refs.Load() != 1 {
		t.Fatalf("after EvictFile: %d refs, want 1", x.refs.Load())
	}
	c.Set(6, 0, x)
	y := Alloc(100)
	c.Set(6, 0, y)
	if x.refs.Load() != 1 || y.refs.Load() != 2 {
		t.Fatalf("after replace: refs %d and %d, want 1 and 2", x.refs.Load(), y.refs.Load())
	}
	x.Release()
	y.Release()

	// A block too large for its shard is not kept, and not referenced.
	z := Alloc(8000)
	c.Set(7, 0, z)
	if z.refs.Load() != 1 {
		t.Fatalf("uncached block: %d refs, want 1", z.refs.Load())
	}
	z.Release()
}

func TestReleaseTooOften(t *testing.T) {
	b := Alloc(10)
	b.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("second Release did not panic")
		}
	}()
	b.Release()
}

// TestAllocRecycles checks that a released buffer is reused: a steady
// stream of Alloc/Release allocates nothing. (The race detector makes
// sync.Pool drop items at random, so it is checked without it.)
func TestAllocRecycles(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		b := Alloc(4100)
		b.Release()
	})
	if allocs != 0 {
		t.Fatalf("Alloc/Release allocates %.1f times per call, want 0", allocs)
	}
}

// TestBlockAbandon: a buffer one holder abandoned is never recycled, even
// when another holder drops the last reference later, so slices of it
// handed out before keep their bytes.
func TestBlockAbandon(t *testing.T) {
	for _, abandonFirst := range []bool{true, false} {
		b := Alloc(4000)
		data := b.Data()
		for i := range data {
			data[i] = byte(i)
		}
		b.Ref() // a second holder, as the cache
		if abandonFirst {
			b.Abandon()
			b.Release()
		} else {
			b.Release()
			b.Abandon()
		}
		for i := 0; i < 100; i++ {
			n := Alloc(4000)
			if &n.Data()[0] == &data[0] {
				t.Fatalf("abandonFirst=%v: an abandoned buffer was handed out again", abandonFirst)
			}
			for j := range n.Data() {
				n.Data()[j] = 0xff
			}
			n.Release()
		}
		for i := range data {
			if data[i] != byte(i) {
				t.Fatalf("abandonFirst=%v: byte %d of an abandoned buffer changed", abandonFirst, i)
			}
		}
	}
}
