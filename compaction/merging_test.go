package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// sliceIter is a model InternalIterator over sorted entries.
type sliceIter struct {
	keys, vals [][]byte
	pos        int
	err        error
	failAt     int // position at which Next reports an error; -1 never
}

func (s *sliceIter) valid() bool { return s.pos >= 0 && s.pos < len(s.keys) }
func (s *sliceIter) First() bool { s.pos = 0; return s.Valid() }
func (s *sliceIter) Last() bool  { s.pos = len(s.keys) - 1; return s.Valid() }
func (s *sliceIter) SeekGE(k []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool { return base.CompareInternal(s.keys[i], k) >= 0 })
	return s.Valid()
}
func (s *sliceIter) SeekLT(k []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool { return base.CompareInternal(s.keys[i], k) >= 0 }) - 1
	return s.Valid()
}
func (s *sliceIter) Next() bool {
	s.pos++
	if s.failAt >= 0 && s.pos == s.failAt {
		s.err = errors.New("injected")
		s.pos = len(s.keys)
	}
	return s.Valid()
}
func (s *sliceIter) Prev() bool    { s.pos--; return s.Valid() }
func (s *sliceIter) Valid() bool   { return s.err == nil && s.valid() }
func (s *sliceIter) Key() []byte   { return s.keys[s.pos] }
func (s *sliceIter) Value() []byte { return s.vals[s.pos] }
func (s *sliceIter) Error() error  { return s.err }
func (s *sliceIter) Close() error  { return s.err }

func TestMergingIteratorModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		nChildren := 1 + rng.Intn(6)
		var all [][]byte
		children := make([]base.InternalIterator, nChildren)
		seq := uint64(1)
		for c := range children {
			s := &sliceIter{failAt: -1}
			for i := rng.Intn(20); i > 0; i-- {
				k := base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", rng.Intn(30))), seq, base.Kind(rng.Intn(2)))
				seq++
				s.keys = append(s.keys, k)
				all = append(all, k)
			}
			sort.Slice(s.keys, func(i, j int) bool { return base.CompareInternal(s.keys[i], s.keys[j]) < 0 })
			for _, k := range s.keys {
				s.vals = append(s.vals, append([]byte("v"), k...))
			}
			children[c] = s
		}
		sort.Slice(all, func(i, j int) bool { return base.CompareInternal(all[i], all[j]) < 0 })
		m := NewMergingIterator(children...)
		// Forward and backward full scans.
		var got [][]byte
		for ok := m.First(); ok; ok = m.Next() {
			if !bytes.Equal(m.Value(), append([]byte("v"), m.Key()...)) {
				t.Fatal("value does not belong to key")
			}
			got = append(got, append([]byte(nil), m.Key()...))
		}
		if len(got) != len(all) {
			t.Fatalf("forward: %d entries, want %d", len(got), len(all))
		}
		for i := range got {
			if !bytes.Equal(got[i], all[i]) {
				t.Fatalf("forward entry %d differs", i)
			}
		}
		i := len(all) - 1
		for ok := m.Last(); ok; ok = m.Prev() {
			if !bytes.Equal(m.Key(), all[i]) {
				t.Fatalf("backward entry %d differs", i)
			}
			i--
		}
		if i != -1 {
			t.Fatalf("backward stopped at %d", i)
		}
		// Random walks with direction changes.
		pos := -1
		for step := 0; step < 100 && len(all) > 0; step++ {
			switch op := rng.Intn(5); {
			case op == 0:
				target := base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", rng.Intn(32))), uint64(rng.Intn(int(seq)+1)), base.KindSet)
				pos = sort.Search(len(all), func(i int) bool { return base.CompareInternal(all[i], target) >= 0 })
				m.SeekGE(target)
			case op == 1:
				target := base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", rng.Intn(32))), uint64(rng.Intn(int(seq)+1)), base.KindSet)
				pos = sort.Search(len(all), func(i int) bool { return base.CompareInternal(all[i], target) >= 0 }) - 1
				m.SeekLT(target)
			case op == 2 && m.Valid():
				pos++
				m.Next()
			case op == 3 && m.Valid():
				pos--
				m.Prev()
			default:
				pos = 0
				m.First()
			}
			want := pos >= 0 && pos < len(all)
			if m.Valid() != want {
				t.Fatalf("trial %d step %d: valid=%v want %v", trial, step, m.Valid(), want)
			}
			if want && !bytes.Equal(m.Key(), all[pos]) {
				t.Fatalf("trial %d step %d: key %s want %s", trial, step, base.FormatInternalKey(m.Key()), base.FormatInternalKey(all[pos]))
			}
			if !want {
				pos = -1
				m.First()
				pos = 0
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMergingIteratorChildError(t *testing.T) {
	a := &sliceIter{failAt: 2}
	b := &sliceIter{failAt: -1}
	for i := 0; i < 5; i++ {
		a.keys = append(a.keys, base.MakeInternalKey([]byte{'a', byte('0' + i)}, 1, base.KindSet))
		a.vals = append(a.vals, nil)
		b.keys = append(b.keys, base.MakeInternalKey([]byte{'b', byte('0' + i)}, 2, base.KindSet))
		b.vals = append(b.vals, nil)
	}
	m := NewMergingIterator(a, b)
	n := 0
	for ok := m.First(); ok; ok = m.Next() {
		n++
	}
	if m.Error() == nil || n != 2 {
		t.Fatalf("error not surfaced: n=%d err=%v", n, m.Error())
	}
	if m.Close() == nil {
		t.Fatal("Close lost the error")
	}
}
