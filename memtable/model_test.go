package memtable

import (
	"bytes"
	"fmt"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// model is the reference implementation: a slice of entries kept sorted by
// base.CompareInternal.
type model struct {
	ents []modelEntry
}

type modelEntry struct {
	ikey  []byte
	value []byte
}

func (md *model) add(seq uint64, kind base.Kind, ukey, value []byte) {
	ik := base.MakeInternalKey(ukey, seq, kind)
	i := md.seekGE(ik)
	md.ents = append(md.ents, modelEntry{})
	copy(md.ents[i+1:], md.ents[i:])
	md.ents[i] = modelEntry{ik, append([]byte(nil), value...)}
}

// seekGE returns the index of the first entry >= ikey (len when none).
func (md *model) seekGE(ikey []byte) int {
	return sort.Search(len(md.ents), func(i int) bool {
		return base.CompareInternal(md.ents[i].ikey, ikey) >= 0
	})
}

func (md *model) get(ukey []byte, seq uint64) (value []byte, kind base.Kind, found bool) {
	if seq > base.MaxSeqNum {
		seq = base.MaxSeqNum
	}
	i := md.seekGE(base.MakeSeekKey(ukey, seq))
	if i == len(md.ents) {
		return nil, 0, false
	}
	u, _, k, _ := base.ParseInternalKey(md.ents[i].ikey)
	if !bytes.Equal(u, ukey) {
		return nil, 0, false
	}
	return md.ents[i].value, k, true
}

func fmtKey(k []byte) string {
	if k == nil {
		return "<invalid>"
	}
	return base.FormatInternalKey(k)
}

// checkPos reports a mismatch between the iterator and model index i
// (i < 0 or i >= len means the iterator must be invalid).
func checkPos(md *model, it *Iterator, ok bool, i int) error {
	want := i >= 0 && i < len(md.ents)
	if ok != want || it.Valid() != want {
		var wk []byte
		if want {
			wk = md.ents[i].ikey
		}
		return fmt.Errorf("valid=%v/%v at %s, want valid=%v at %s", ok, it.Valid(), fmtKey(it.Key()), want, fmtKey(wk))
	}
	if !want {
		return nil
	}
	if !bytes.Equal(it.Key(), md.ents[i].ikey) {
		return fmt.Errorf("key %s, want %s", fmtKey(it.Key()), fmtKey(md.ents[i].ikey))
	}
	if !bytes.Equal(it.Value(), md.ents[i].value) {
		return fmt.Errorf("value of %s: %q, want %q", fmtKey(it.Key()), it.Value(), md.ents[i].value)
	}
	return nil
}

// checkFull compares both full traversals and the counters with the model.
func checkFull(t testing.TB, m *MemTable, md *model) {
	t.Helper()
	if m.Len() != len(md.ents) || m.Empty() != (len(md.ents) == 0) {
		t.Fatalf("Len=%d Empty=%v, model has %d", m.Len(), m.Empty(), len(md.ents))
	}
	checkStructure(t, m)
	it := m.NewIterator()
	defer it.Close()
	i := 0
	for ok := it.First(); ; ok = it.Next() {
		if err := checkPos(md, it, ok, i); err != nil {
			t.Fatalf("forward step %d: %v", i, err)
		}
		if !ok {
			break
		}
		i++
	}
	i = len(md.ents) - 1
	for ok := it.Last(); ; ok = it.Prev() {
		if err := checkPos(md, it, ok, i); err != nil {
			t.Fatalf("backward step %d: %v", i, err)
		}
		if !ok {
			break
		}
		i--
	}
}

// checkStructure walks every level of the skiplist: each must be strictly
// sorted, only link nodes tall enough for it, and be a subset of the level
// below (checked by counting: every node of height > l is on level l).
func checkStructure(t testing.TB, m *MemTable) {
	t.Helper()
	r := reader{m: m, slabs: *m.slabs.Load()}
	height := int(m.height.Load())
	tall := make([]int, maxHeight+1) // tall[l] = nodes of height > l
	for ref := link(r.node(headRef), 0).Load(); ref != nilRef; {
		nd := r.node(ref)
		for l := 0; l < nodeHeight(nd); l++ {
			tall[l]++
		}
		ref = link(nd, 0).Load()
	}
	for level := 0; level < maxHeight; level++ {
		var prev []byte
		n := 0
		for ref := link(r.node(headRef), level).Load(); ref != nilRef; {
			nd := r.node(ref)
			if level >= height {
				t.Fatalf("level %d at or above height %d is linked", level, height)
			}
			if nodeHeight(nd) <= level {
				t.Fatalf("node %s of height %d linked on level %d", fmtKey(nodeIKey(nd)), nodeHeight(nd), level)
			}
			if prev != nil && base.CompareInternal(prev, nodeIKey(nd)) >= 0 {
				t.Fatalf("level %d: %s before %s", level, fmtKey(prev), fmtKey(nodeIKey(nd)))
			}
			prev = nodeIKey(nd)
			n++
			ref = link(nd, level).Load()
		}
		if n != tall[level] {
			t.Fatalf("level %d links %d nodes, %d are tall enough", level, n, tall[level])
		}
	}
}
