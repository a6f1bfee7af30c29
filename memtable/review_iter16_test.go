package memtable

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Review 16: MemTable.FilterHashes against MayContainHash.

// TestR16FilterHashesBits: for filters of 1 to 200 words with random
// (hostile) words, every bit value of a uint8 mask, pass entries that
// start with other bits set or clear, batches of 0 to 300 hashes and pass
// longer than hs: FilterHashes clears exactly bit of pass[i] where
// MayContainHash(hs[i]) is false, touches no other bit and no entry past
// len(hs); a memtable without a filter leaves pass as it is.
func TestR16FilterHashesBits(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for iter := 0; iter < 3000; iter++ {
		var m *MemTable
		if iter%10 == 0 {
			m = New()
		} else {
			m = NewWithFilter(1 + rng.Intn(200*64))
			for w := range m.filter {
				switch rng.Intn(4) {
				case 0:
					m.filter[w].Store(^uint64(0))
				case 1:
				default:
					m.filter[w].Store(rng.Uint64() | rng.Uint64())
				}
			}
		}
		n := rng.Intn(300)
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
			if rng.Intn(20) == 0 {
				hs[i] = []uint64{0, ^uint64(0), 1 << 63}[rng.Intn(3)]
			}
		}
		pass := make([]uint8, n+rng.Intn(5))
		for i := range pass {
			pass[i] = uint8(rng.Intn(256))
		}
		orig := append([]uint8(nil), pass...)
		bit := uint8(rng.Intn(256))
		m.FilterHashes(hs, pass, bit)
		for i := range pass {
			want := orig[i]
			if i < n && !m.MayContainHash(hs[i]) {
				want &^= bit
			}
			if pass[i] != want {
				t.Fatalf("iter %d (%d words): pass[%d] = %08b, want %08b (orig %08b, bit %08b)", iter, len(m.filter), i, pass[i], want, orig[i], bit)
			}
		}
	}
}

// TestR16FilterHashesKeysAdded: keys added are never ruled out by
// FilterHashes, for real memtables filled by Add.
func TestR16FilterHashesKeysAdded(t *testing.T) {
	rng := rand.New(rand.NewSource(161))
	for _, bitsN := range []int{1, 64, 1000, 1 << 15} {
		m := NewWithFilter(bitsN)
		var hs []uint64
		for i := 0; i < 2000; i++ {
			k := make([]byte, rng.Intn(20))
			rng.Read(k)
			m.Add(uint64(i+1), base.KindSet, k, nil)
			hs = append(hs, KeyHash(k))
		}
		pass := make([]uint8, len(hs))
		for i := range pass {
			pass[i] = 3
		}
		m.FilterHashes(hs, pass, 2)
		for i, p := range pass {
			if p != 3 {
				t.Fatalf("%d bits: added key %d ruled out (pass %08b)", bitsN, i, p)
			}
		}
	}
}

// TestR16FilterHashesConcurrentAdds: FilterHashes while writers Add (run
// with -race): a key whose Add returned before the call is never ruled
// out.
func TestR16FilterHashesConcurrentAdds(t *testing.T) {
	m := NewWithFilter(4096)
	const n = 3000
	var done atomic.Int64 // keys [0, done) added
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			k := []byte{byte(i >> 8), byte(i), 'k'}
			m.Add(uint64(i+1), base.KindSet, k, nil)
			done.Store(int64(i + 1))
		}
	}()
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = KeyHash([]byte{byte(i >> 8), byte(i), 'k'})
	}
	pass := make([]uint8, n)
	for done.Load() < n {
		upto := int(done.Load())
		for i := range pass {
			pass[i] = 1
		}
		m.FilterHashes(hs, pass, 1)
		for i := 0; i < upto; i++ {
			if pass[i] != 1 {
				t.Fatalf("key %d, added before the call, ruled out", i)
			}
		}
	}
	wg.Wait()
}
