package memtable

import (
	"bytes"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// FuzzMemTable reads a program of Add, Get and seek/step operations from
// the input and checks every answer against the sorted-slice model.
func FuzzMemTable(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x03abc\x00\x01\x05\x02\x01a\xff\xff"))
	f.Add([]byte("\x00\x00\x00\x01\x00\x00\x01\x00\x02\x00\x02\x03\x00\x00\x00\x00\x07"))
	f.Add([]byte("\x01\x02ab\x00\x09\x01\xff\x00\x02a\x00\x0a\x00\x03\x03\x02a\x00\x00\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pos := 0
		next := func() byte {
			if pos >= len(data) {
				return 0
			}
			pos++
			return data[pos-1]
		}
		key := func() []byte {
			k := make([]byte, int(next())%6)
			for i := range k {
				k[i] = keyAlphabet[int(next())%len(keyAlphabet)]
			}
			return k
		}
		m := New()
		var md model
		used := map[uint64]bool{}
		it := m.NewIterator()
		for pos < len(data) {
			switch op := next(); op % 4 {
			case 0, 1: // Add
				k := key()
				seq := uint64(next())<<8 | uint64(next())
				kind := base.Kind(op >> 2 & 1)
				n := int(next())
				if n == 0xff {
					n = 20000 // beyond the first slab's inline limit
				} else {
					n %= 24
				}
				if used[seq] {
					continue
				}
				used[seq] = true
				v := bytes.Repeat([]byte{byte(seq)}, n)
				m.Add(seq, kind, k, v)
				md.add(seq, kind, k, v)
			case 2: // Get
				k := key()
				seq := uint64(next())<<8 | uint64(next())
				v, kind, found := m.Get(k, seq)
				wv, wkind, wfound := md.get(k, seq)
				if found != wfound || kind != wkind || !bytes.Equal(v, wv) {
					t.Fatalf("Get(%q, %d) = %q, %v, %v; want %q, %v, %v", k, seq, v, kind, found, wv, wkind, wfound)
				}
			case 3: // seek, then steps
				probe := base.MakeInternalKey(key(), uint64(next())<<8|uint64(next()), base.Kind(op>>2&1))
				var i int
				var ok bool
				if op&8 == 0 {
					i, ok = md.seekGE(probe), it.SeekGE(probe)
				} else {
					i, ok = md.seekGE(probe)-1, it.SeekLT(probe)
				}
				if err := checkPos(&md, it, ok, i); err != nil {
					t.Fatalf("seek %s: %v", fmtKey(probe), err)
				}
				steps := next()
				for s := 0; s < 8 && it.Valid(); s++ {
					if steps>>s&1 == 0 {
						i, ok = i+1, it.Next()
					} else {
						i, ok = i-1, it.Prev()
					}
					if err := checkPos(&md, it, ok, i); err != nil {
						t.Fatalf("seek %s, step %d: %v", fmtKey(probe), s, err)
					}
				}
			}
		}
		checkFull(t, m, &md)
	})
}
