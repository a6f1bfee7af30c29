package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Adversarial review of 77bbe7a: Get answers not-found at once when the
// memtable is Empty (count == 0).

// TestReview11GetEqualsGetEntry: on random memtables (empty, one entry,
// range tombstones only, mixed) Get must agree with GetEntry, which has
// no shortcut, and with a model, at every sequence number.
func TestReview11GetEqualsGetEntry(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for round := 0; round < 300; round++ {
		m := New()
		type ent struct {
			seq  uint64
			kind base.Kind
			val  string
		}
		model := map[string][]ent{}
		n := []int{0, 1, 2, 5, 40}[round%5]
		seq := uint64(1)
		if round%7 == 3 {
			// Range tombstones only: the memtable is not Empty, but holds
			// no point entry.
			m.AddRangeDel(seq, []byte("a"), []byte("z"))
			seq++
			if m.Empty() || m.Len() != 1 {
				t.Fatalf("after a range tombstone: Empty %v, Len %d", m.Empty(), m.Len())
			}
		}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("k%02d", rng.Intn(20))
			kind := base.KindSet
			if rng.Intn(4) == 0 {
				kind = base.KindDelete
			}
			v := fmt.Sprintf("v%d", seq)
			m.Add(seq, kind, []byte(k), []byte(v))
			model[k] = append(model[k], ent{seq, kind, v})
			seq++
			if m.Empty() {
				t.Fatal("Empty after Add")
			}
		}
		for s := uint64(0); s <= seq+1; s++ {
			for i := 0; i < 21; i++ {
				k := fmt.Sprintf("k%02d", i)
				var want *ent
				for j := range model[k] {
					if e := &model[k][j]; e.seq <= s {
						want = e
					}
				}
				v, kind, ok := m.Get([]byte(k), s)
				v2, es, kind2, ok2 := m.GetEntry([]byte(k), s)
				if ok != ok2 || kind != kind2 || !bytes.Equal(v, v2) {
					t.Fatalf("round %d: Get(%s, %d) = %q %v %v, GetEntry = %q %v %v", round, k, s, v, kind, ok, v2, kind2, ok2)
				}
				if (want != nil) != ok || (ok && (want.kind != kind || want.val != string(v) || want.seq != es)) {
					t.Fatalf("round %d: Get(%s, %d) = %q %v %v, want %+v", round, k, s, v, kind, ok, want)
				}
			}
		}
		if _, _, ok := m.Get([]byte("k00"), base.MaxSeqNum+5); ok != (len(model["k00"]) > 0) {
			t.Fatalf("round %d: Get above MaxSeqNum = %v", round, ok)
		}
	}
}

// TestReview11GetFirstEntryManyReaders: several readers race the first
// Adds of fresh memtables; once a writer publishes an entry (after its Add
// returned), every reader must find it through Get and through an
// iterator, and Len/Empty must count it. The first entry is sometimes a
// range tombstone, then a point entry.
func TestReview11GetFirstEntryManyReaders(t *testing.T) {
	rounds := 1500
	if testing.Short() {
		rounds = 200
	}
	for round := 0; round < rounds; round++ {
		m := New()
		var published atomic.Int64 // entries published so far
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		const entries = 3
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for {
					p := published.Load()
					if m.Len() < int(p) {
						errc <- fmt.Errorf("round %d: Len %d with %d published", round, m.Len(), p)
						return
					}
					if p > 0 && m.Empty() {
						errc <- fmt.Errorf("round %d: Empty with %d published", round, p)
						return
					}
					for i := int64(0); i < p; i++ {
						k := []byte(fmt.Sprintf("k%d-%d", round, i))
						if _, _, ok := m.Get(k, base.MaxSeqNum); !ok {
							errc <- fmt.Errorf("round %d: published entry %d not found by Get", round, i)
							return
						}
						var it Iterator
						m.InitIterator(&it)
						if !it.SeekGE(base.MakeInternalKey(k, base.MaxSeqNum, base.KindSeek)) || !bytes.Equal(base.UserKey(it.Key()), k) {
							errc <- fmt.Errorf("round %d: published entry %d not found by an iterator", round, i)
							return
						}
					}
					if p == entries {
						return
					}
					runtime.Gosched()
				}
			}(g)
		}
		seq := uint64(1)
		if round%2 == 1 {
			m.AddRangeDel(seq, []byte("a"), []byte("b"))
			seq++
		}
		for i := 0; i < entries; i++ {
			m.Add(seq, base.KindSet, []byte(fmt.Sprintf("k%d-%d", round, i)), []byte("v"))
			seq++
			published.Store(int64(i + 1))
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
}

// TestReview11GetDuringFill: a reader keeps reading keys a writer has
// published while the writer fills a fresh memtable with sorted, reversed
// and random keys: each published key is found, with its newest
// published value.
func TestReview11GetDuringFill(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 4000
	}
	for _, order := range []string{"asc", "desc", "random"} {
		m := New()
		keys := make([]int, n)
		for i := range keys {
			keys[i] = i
		}
		switch order {
		case "desc":
			sort.Sort(sort.Reverse(sort.IntSlice(keys)))
		case "random":
			rand.New(rand.NewSource(3)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		var published atomic.Int64
		published.Store(-1)
		done := make(chan error, 1)
		go func() {
			rng := rand.New(rand.NewSource(4))
			for {
				p := int(published.Load())
				if p >= 0 {
					i := p
					if rng.Intn(2) == 0 {
						i = rng.Intn(p + 1)
					}
					k := []byte(fmt.Sprintf("key%08d", keys[i]))
					v, _, ok := m.Get(k, base.MaxSeqNum)
					if !ok || string(v) != fmt.Sprintf("v%d", i) {
						done <- fmt.Errorf("%s: published key %s (entry %d of %d) = %q, %v", order, k, i, p, v, ok)
						return
					}
				}
				if p == n-1 {
					done <- nil
					return
				}
			}
		}()
		for i, k := range keys {
			m.Add(uint64(i+1), base.KindSet, []byte(fmt.Sprintf("key%08d", k)), []byte(fmt.Sprintf("v%d", i)))
			published.Store(int64(i))
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
