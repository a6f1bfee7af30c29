package memtable

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// TestFilterHoldsEveryKey adds keys of many lengths (the empty key too)
// at random sequence numbers and kinds and checks that the filter says
// "may be there" for every one added, by MayContain and by
// MayContainHash(KeyHash), and that Get finds each: a filter that forgot
// a key would make a read miss it.
func TestFilterHoldsEveryKey(t *testing.T) {
	for _, bitsN := range []int{1, 64, 640, 1 << 16} {
		m := NewWithFilter(bitsN)
		if !m.HasFilter() || m.FilterBytes() < 8 || m.FilterBytes()*8 < bitsN {
			t.Fatalf("NewWithFilter(%d): %d bytes", bitsN, m.FilterBytes())
		}
		var keys [][]byte
		for i := 0; i < 3000; i++ {
			k := make([]byte, i%37)
			for j := range k {
				k[j] = byte(i*7 + j*13)
			}
			kind := base.KindSet
			if i%5 == 0 {
				kind = base.KindDelete
			}
			m.Add(uint64(i+1), kind, k, []byte("v"))
			keys = append(keys, k)
			if !m.MayContain(k) || !m.MayContainHash(KeyHash(k)) {
				t.Fatalf("%d bits: key %x not in the filter right after its Add", bitsN, k)
			}
		}
		for _, k := range keys {
			if !m.MayContain(k) {
				t.Fatalf("%d bits: key %x not in the filter", bitsN, k)
			}
			if _, _, ok := m.Get(k, base.MaxSeqNum); !ok {
				t.Fatalf("%d bits: Get(%x) found nothing", bitsN, k)
			}
		}
	}
	m := New()
	if m.HasFilter() || m.FilterBytes() != 0 || !m.MayContain([]byte("x")) || !m.MayContainHash(1) {
		t.Fatal("New's memtable: a filter, or one that says no")
	}
}

// TestFilterFalsePositiveRate measures the filter's false positive rate
// for absent keys at a light load (the default sizing with 116-byte
// entries: 75 bits a key) and at the heaviest (24-byte entries: 16 bits
// a key) and at 8 bits a key, against the rate a word-blocked Bloom filter
// of filterProbes bits has: a word holds Poisson(n/words) keys, each
// setting its bits at random in the word (filterWord may set fewer than 6
// distinct bits, which the model counts as 6). The measured rate must be
// within 1.5x of the model plus three standard errors of the sample.
func TestFilterFalsePositiveRate(t *testing.T) {
	for _, bitsPerKey := range []int{75, 16, 8} {
		const n = 50000
		m := NewWithFilter(n * bitsPerKey)
		key := make([]byte, 16)
		for i := 0; i < n; i++ {
			binary.BigEndian.PutUint64(key, uint64(i))
			m.filterAdd(key)
		}
		const probes = 400000
		fp := 0
		for i := 0; i < probes; i++ {
			binary.BigEndian.PutUint64(key, uint64(n+i))
			if m.MayContain(key) {
				fp++
			}
		}
		words := float64(len(m.filter))
		lambda := n / words
		model, pois := 0.0, math.Exp(-lambda)
		for j := 0; j < 200; j++ {
			set := 1 - math.Pow(63.0/64, float64(filterProbes*j))
			model += pois * math.Pow(set, filterProbes)
			pois *= lambda / float64(j+1)
		}
		got := float64(fp) / probes
		bound := 1.5*model + 3*math.Sqrt(model*(1-model)/probes)
		t.Logf("%d bits a key: false positive rate %.4f%%, model %.4f%%", bitsPerKey, 100*got, 100*model)
		if got > bound {
			t.Errorf("%d bits a key: false positive rate %.4f%% above %.4f%% (model %.4f%%)", bitsPerKey, 100*got, 100*bound, 100*model)
		}
	}
}

// TestFilterConcurrentReaders runs readers against a writer: every key
// whose Add returned before a reader looked (the writer publishes how
// many) must pass the filter and be found by Get, and readers checking
// keys being added must not disturb anything (run with -race).
func TestFilterConcurrentReaders(t *testing.T) {
	const n = 20000
	m := NewWithFilter(n * 8)
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte("k"), uint64(i)*0x9e3779b97f4a7c15) }
	var added atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				done := int(added.Load())
				if done == 0 {
					runtime.Gosched()
					continue
				}
				k := key((i*7919 + r) % done)
				if !m.MayContain(k) {
					t.Errorf("key %x added before the check is not in the filter", k)
					return
				}
				if _, _, ok := m.Get(k, base.MaxSeqNum); !ok {
					t.Errorf("key %x added before the check is not found", k)
					return
				}
				m.MayContain(key(done + i%16)) // keys being added
			}
		}()
	}
	for i := 0; i < n; i++ {
		m.Add(uint64(i+1), base.KindSet, key(i), []byte("v"))
		added.Store(int64(i + 1))
	}
	close(stop)
	wg.Wait()
}

// BenchmarkFilterMayContainHash: the filter check of an absent key's
// hash, on the filter of a default 4 MiB memtable (256 KiB) holding
// kvbench's 28,000 entries; keys are hashed before the timer starts.
func BenchmarkFilterMayContainHash(b *testing.B) {
	m := NewWithFilter(4 << 20 / 2)
	for i := 0; i < 28000; i++ {
		m.filterAdd([]byte(fmt.Sprintf("%016d", i)))
	}
	hs := make([]uint64, 4096)
	for i := range hs {
		hs[i] = KeyHash([]byte(fmt.Sprintf("%015d", i)))
	}
	b.ResetTimer()
	pass := 0
	for i := 0; i < b.N; i++ {
		if m.MayContainHash(hs[i&(len(hs)-1)]) {
			pass++
		}
	}
	b.ReportMetric(float64(pass)/float64(b.N), "passed/op")
}

// TestFilterHashesAgainstMayContainHash checks the batch check against
// the one-key check on a filter half full, for present and absent keys:
// FilterHashes clears exactly the bit of the keys MayContainHash rules
// out, leaves the other bits alone, and changes nothing without a filter.
func TestFilterHashesAgainstMayContainHash(t *testing.T) {
	m := NewWithFilter(4096)
	for i := 0; i < 400; i++ {
		m.Add(uint64(i+1), base.KindSet, []byte(fmt.Sprintf("k%05d", 2*i)), nil)
	}
	hs := make([]uint64, 800)
	for i := range hs {
		hs[i] = KeyHash([]byte(fmt.Sprintf("k%05d", i)))
	}
	pass := make([]uint8, len(hs)+3) // longer than hs: the tail stays
	for i := range pass {
		pass[i] = 0xa5
	}
	m.FilterHashes(hs, pass, 4)
	cleared := 0
	for i, h := range hs {
		want := uint8(0xa5)
		if !m.MayContainHash(h) {
			want &^= 4
			cleared++
		}
		if pass[i] != want {
			t.Fatalf("key %d: pass %#x, want %#x", i, pass[i], want)
		}
	}
	for _, p := range pass[len(hs):] {
		if p != 0xa5 {
			t.Fatalf("pass beyond hs changed: %#x", p)
		}
	}
	if cleared < 300 {
		t.Fatalf("only %d of 400 absent keys ruled out", cleared)
	}
	before := string(pass)
	New().FilterHashes(hs, pass, 0xff)
	if string(pass) != before {
		t.Fatal("a memtable without a filter changed pass")
	}
}
