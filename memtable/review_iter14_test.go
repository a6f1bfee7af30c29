package memtable

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// TestReview14FilterConcurrentAdd has one goroutine Add keys (small
// filters that saturate, and large ones; values inline and large) while
// readers check that every key whose Add returned is in the filter and
// found by Get, and that a reader that finds a node also gets "maybe"
// from the filter (the bits are set before the node is linked).
func TestReview14FilterConcurrentAdd(t *testing.T) {
	for _, bitsN := range []int{64, 4096, 1 << 20} {
		t.Run(fmt.Sprint(bitsN), func(t *testing.T) {
			m := NewWithFilter(bitsN)
			const n = 10000
			key := func(i int) []byte {
				k := make([]byte, 4+i%23)
				binary.BigEndian.PutUint32(k, uint32(i*2654435761))
				return append(k, fmt.Sprint(i)...)
			}
			var done atomic.Int64 // Adds returned
			var stop atomic.Bool
			var wg sync.WaitGroup
			var bad atomic.Int64
			for r := 0; r < 2; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(r)))
					for !stop.Load() {
						hi := int(done.Load())
						if hi == 0 {
							runtime.Gosched()
							continue
						}
						i := rng.Intn(hi)
						k := key(i)
						if !m.MayContain(k) || !m.MayContainHash(KeyHash(k)) {
							if bad.Add(1) < 5 {
								t.Errorf("key %d (added) not in the filter", i)
							}
						}
						if _, _, ok := m.Get(k, base.MaxSeqNum); !ok {
							if bad.Add(1) < 5 {
								t.Errorf("key %d (added) not found", i)
							}
						}
						// A key being added right now: found implies maybe.
						j := hi
						kj := key(j)
						if _, _, ok := m.Get(kj, base.MaxSeqNum); ok && !m.MayContain(kj) {
							if bad.Add(1) < 5 {
								t.Errorf("key %d found but not in the filter", j)
							}
						}
					}
				}(r)
			}
			val := make([]byte, 100)
			big := make([]byte, 70000)
			for i := 0; i < n; i++ {
				v := val
				if i%500 == 0 {
					v = big
				}
				m.Add(uint64(i+1), base.Kind(i%2), key(i), v)
				done.Store(int64(i + 1))
			}
			stop.Store(true)
			wg.Wait()
			for i := 0; i < n; i++ {
				if !m.MayContain(key(i)) {
					t.Fatalf("key %d not in the filter at rest", i)
				}
			}
		})
	}
}

// TestReview14FilterWordInRange checks filterWord's word index stays in
// range and its mask has 1..6 bits for hashes at the extremes (0, the
// "not yet hashed" sentinel of package db, included) and sizes up to the
// largest filter (1 GiB write buffer: 2^23 words).
func TestReview14FilterWordInRange(t *testing.T) {
	hs := []uint64{0, 1, 1 << 63, ^uint64(0), ^uint64(0) - 1, 0x9e3779b97f4a7c15}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		hs = append(hs, rng.Uint64())
	}
	for _, n := range []int{1, 2, 3, 63, 64, 1000, 1 << 23, 1<<23 + 1} {
		for _, h := range hs {
			w, mask := filterWord(h, n)
			c := 0
			for x := mask; x != 0; x &= x - 1 {
				c++
			}
			if w < 0 || w >= n || c < 1 || c > filterProbes {
				t.Fatalf("filterWord(%#x, %d) = %d, %#x", h, n, w, mask)
			}
		}
	}
	// The sentinel hash 0 is a hash like any other.
	m := NewWithFilter(1 << 10)
	if m.MayContainHash(0) {
		t.Fatal("an empty filter says maybe for hash 0")
	}
	w, mask := filterWord(0, len(m.filter))
	m.filter[w].Or(mask)
	if !m.MayContainHash(0) {
		t.Fatal("hash 0's bits set, and the filter says no")
	}
}
