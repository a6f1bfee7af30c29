package base

import (
	"sync"
	"testing"
)

// TestCounter adds from many goroutines, with Add and with Inc/DecAt pairs,
// and checks the sum.
func TestCounter(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				c.Add(2)
				cell := c.Inc()
				if cell < 0 || cell >= counterShards {
					t.Errorf("Inc returned cell %d", cell)
					return
				}
				c.DecAt(cell)
				c.Add(-1)
			}
		}()
	}
	wg.Wait()
	if got := c.Load(); got != 8*10000 {
		t.Fatalf("Load() = %d, want %d", got, 8*10000)
	}
}

// growStack recurses deep enough to make the goroutine's stack grow to
// 64 KiB or more; Go keeps the grown stack until a collection shrinks it.
//
//go:noinline
func growStack(depth int) byte {
	var pad [1024]byte
	pad[depth%len(pad)] = byte(depth)
	if depth == 0 {
		return pad[0]
	}
	return growStack(depth-1) + pad[depth%len(pad)]
}

// TestStackShardSpread: goroutines running the same code at the same depth
// on grown stacks (allocated at multiples of their size, so their
// addresses differ only in high bits) must still spread over the cells.
func TestStackShardSpread(t *testing.T) {
	const n = 64
	shards := make(chan int, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			growStack(64)
			shards <- stackShard()
			<-release // stay alive, so no two goroutines share a stack
		}()
	}
	seen := map[int]bool{}
	for g := 0; g < n; g++ {
		seen[<-shards] = true
	}
	close(release)
	wg.Wait()
	t.Logf("%d goroutines used %d of %d cells", n, len(seen), counterShards)
	if len(seen) < counterShards/2 {
		t.Fatalf("%d goroutines used only %d of %d cells", n, len(seen), counterShards)
	}
}
