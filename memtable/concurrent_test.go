package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// concKey returns the distinct user key number i: a scrambled 8-byte prefix
// (unique, as the multiplier is odd) plus a short zero suffix, or for one
// key in 199 a long one, so the writer also starts larger shared slabs
// early and adds nodes with slabs of their own.
func concKey(i int) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15)
	pad := i % 3
	if i%199 == 100 {
		pad = concLongPads[i/199%len(concLongPads)]
	}
	return append(k, make([]byte, pad)...)
}

var concLongPads = []int{17 << 10, maxSharedNode, 70 << 10, maxSharedNode + 1, 200 << 10, 1<<20 + 3}

// concValue is the value written with (ukey, seq): a reader recomputes it
// from the entry's own key to detect torn or mismatched entries. A few are
// large enough to be stored outside the slabs.
func concValue(ukey []byte, seq uint64) []byte {
	n := seq * 7 % 50
	if seq%1999 == 0 {
		n += maxSlabSize/4 + 1
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(seq) + byte(i*31) ^ ukey[0]
	}
	return v
}

// TestConcurrentReaders runs one writer against four readers that iterate
// forward and backward, seek and Get while entries are being added. Readers
// must always see a sorted sequence of intact entries that includes every
// entry published before they started, and Get must answer every snapshot
// that is already complete exactly.
func TestConcurrentReaders(t *testing.T) {
	const (
		nOps    = 20000
		nKeys   = 6000
		readers = 4
	)
	rng := rand.New(rand.NewSource(11))
	// ops[j] is written with sequence number j+1. Each key's first write is
	// a Set; later writes update or delete it.
	type op struct {
		key  int
		kind base.Kind
	}
	ops := make([]op, nOps)
	versions := make([][]uint64, nKeys) // seqs written per key, ascending
	nextNew := 0
	for j := range ops {
		k := nextNew
		if nextNew == nKeys || (nextNew > 0 && rng.Intn(3) == 0) {
			k = rng.Intn(nextNew)
		} else {
			nextNew++
		}
		kind := base.KindSet
		if len(versions[k]) > 0 && rng.Intn(4) == 0 {
			kind = base.KindDelete
		}
		ops[j] = op{k, kind}
		versions[k] = append(versions[k], uint64(j+1))
	}

	m := New()
	var published atomic.Int64 // ops[:published] are in m
	var done atomic.Bool
	var start, wg sync.WaitGroup
	start.Add(readers)
	errs := make(chan error, readers)

	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rrng := rand.New(rand.NewSource(int64(100 + r)))
			start.Done()
			for pass := 0; ; pass++ {
				last := done.Load()
				if err := readerPass(m, rrng, published.Load(), func(j int) (int, base.Kind) { return ops[j].key, ops[j].kind }, versions); err != nil {
					errs <- fmt.Errorf("reader %d pass %d: %w", r, pass, err)
					return
				}
				if last {
					t.Logf("reader %d: %d passes", r, pass+1)
					return
				}
				runtime.Gosched() // let the writer make progress on a small machine
			}
		}(r)
	}

	start.Wait()
	for j, o := range ops {
		seq := uint64(j + 1)
		k := concKey(o.key)
		var v []byte
		if o.kind == base.KindSet {
			v = concValue(k, seq)
		}
		m.Add(seq, o.kind, k, v)
		published.Store(int64(j + 1))
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m.Len() != nOps {
		t.Fatalf("Len = %d, want %d", m.Len(), nOps)
	}
}

// readerPass checks one consistent view: the first p operations are known
// to be in m; later ones may or may not be visible.
func readerPass(m *MemTable, rng *rand.Rand, p int64, opAt func(int) (int, base.Kind), versions [][]uint64) error {
	checkEntry := func(ik, v []byte) error {
		ukey, seq, kind, ok := base.ParseInternalKey(ik)
		if !ok {
			return fmt.Errorf("malformed key %q", ik)
		}
		want := []byte(nil)
		if kind == base.KindSet {
			want = concValue(ukey, seq)
		}
		if !bytes.Equal(v, want) {
			return fmt.Errorf("torn entry %s: value %x, want %x", fmtKey(ik), v, want)
		}
		return nil
	}

	// Full forward scan: sorted, intact, complete up to p.
	it := m.NewIterator()
	var prev []byte
	seen := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		if prev != nil && base.CompareInternal(prev, it.Key()) >= 0 {
			return fmt.Errorf("forward order: %s then %s", fmtKey(prev), fmtKey(it.Key()))
		}
		if err := checkEntry(it.Key(), it.Value()); err != nil {
			return err
		}
		if _, seq, _, _ := base.ParseInternalKey(it.Key()); int64(seq) <= p {
			seen++
		}
		prev = it.Key()
	}
	if seen != p {
		return fmt.Errorf("forward scan saw %d of the %d published entries", seen, p)
	}

	// A bounded backward walk from the end or from a random point.
	ok := it.Last()
	if rng.Intn(2) == 0 {
		ok = it.SeekLT(base.MakeSeekKey(concKey(rng.Intn(len(versions))), base.MaxSeqNum))
	}
	prev = nil
	for s := 0; ok && s < 300; s++ {
		if prev != nil && base.CompareInternal(it.Key(), prev) >= 0 {
			return fmt.Errorf("backward order: %s then %s", fmtKey(prev), fmtKey(it.Key()))
		}
		if err := checkEntry(it.Key(), it.Value()); err != nil {
			return err
		}
		prev = it.Key()
		ok = it.Prev()
	}

	// Seeks land on the correct side of the probe.
	for s := 0; s < 50; s++ {
		probe := base.MakeInternalKey(concKey(rng.Intn(len(versions))), uint64(rng.Int63n(p+2)), base.Kind(rng.Intn(2)))
		if it.SeekGE(probe) && base.CompareInternal(it.Key(), probe) < 0 {
			return fmt.Errorf("SeekGE(%s) = %s", fmtKey(probe), fmtKey(it.Key()))
		}
		if it.SeekLT(probe) && base.CompareInternal(it.Key(), probe) >= 0 {
			return fmt.Errorf("SeekLT(%s) = %s", fmtKey(probe), fmtKey(it.Key()))
		}
	}

	// Gets at complete snapshots have exact answers.
	for s := 0; s < 200 && p > 0; s++ {
		j := rng.Int63n(p)
		k, _ := opAt(int(j))
		snap := uint64(j+1) + uint64(rng.Int63n(p-j))
		vs := versions[k]
		wantSeq := vs[sort.Search(len(vs), func(i int) bool { return vs[i] > snap })-1]
		_, wantKind := opAt(int(wantSeq - 1))
		ukey := concKey(k)
		v, kind, found := m.Get(ukey, snap)
		var wantV []byte
		if wantKind == base.KindSet {
			wantV = concValue(ukey, wantSeq)
		}
		if !found || kind != wantKind || !bytes.Equal(v, wantV) {
			return fmt.Errorf("Get(%x, %d) = %x, %v, %v; want seq %d: %x, %v", ukey, snap, v, kind, found, wantSeq, wantV, wantKind)
		}
	}
	return nil
}

// TestGetFirstEntry: Get answers from an empty memtable without a descent
// (Empty), so the entry that ends the emptiness must count before its Add
// returns. A writer adds one entry to a fresh memtable and then publishes
// it; a reader that sees it published must find it, many times over.
func TestGetFirstEntry(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for round := range rounds {
		m := New()
		key := []byte(fmt.Sprintf("k%06d", round))
		var published atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !published.Load() {
				if _, _, ok := m.Get(key, 1); ok {
					break // found before it was published: allowed
				}
				runtime.Gosched()
			}
			if _, _, ok := m.Get(key, 1); !ok {
				t.Errorf("round %d: the published first entry is not found", round)
			}
		}()
		m.Add(1, base.KindSet, key, []byte("v"))
		published.Store(true)
		<-done
		if t.Failed() {
			return
		}
	}
	if _, _, ok := New().Get([]byte("k"), base.MaxSeqNum); ok {
		t.Fatal("an empty memtable found a key")
	}
}
