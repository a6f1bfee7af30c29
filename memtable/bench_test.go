package memtable

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// benchKeys returns n random 16-byte keys drawn from a fixed seed.
func benchKeys(n int, seed uint64) [][]byte {
	x := seed | 1
	next := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	buf := make([]byte, 16*n)
	keys := make([][]byte, n)
	for i := range keys {
		k := buf[16*i : 16*i+16 : 16*i+16]
		binary.BigEndian.PutUint64(k, next())
		binary.BigEndian.PutUint64(k[8:], next())
		keys[i] = k
	}
	return keys
}

func fillBench(n int) (*MemTable, [][]byte) {
	m := New()
	keys := benchKeys(n, 1)
	val := make([]byte, 100)
	for i, k := range keys {
		m.Add(uint64(i+1), base.KindSet, k, val)
	}
	return m, keys
}

// benchSizes: a 4 MiB memtable (the default write buffer) holds about
// 28,000 entries of 16-byte keys and 100-byte values.
var benchSizes = []int{1_000, 28_000, 300_000}

// BenchmarkAdd adds 16-byte keys with 100-byte values, in random or
// sequential order, to memtables of 4 MiB (a new one when full), with no
// filter or with the one the DB gives them (one bit per 2 bytes).
func BenchmarkAdd(b *testing.B) {
	const writeBuffer = 4 << 20 // start a new memtable like a flush would
	for _, order := range []string{"random", "sequential", "random/filter", "sequential/filter"} {
		newMem := New
		if strings.HasSuffix(order, "/filter") {
			newMem = func() *MemTable { return NewWithFilter(writeBuffer / 2) }
		}
		b.Run(order, func(b *testing.B) {
			key := make([]byte, 16)
			val := make([]byte, 100)
			x := uint64(88172645463325252)
			m := newMem()
			b.ReportAllocs()
			b.SetBytes(int64(len(key) + len(val)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if m.ApproximateMemoryUsage() >= writeBuffer {
					b.StopTimer()
					m = newMem()
					b.StartTimer()
				}
				if strings.HasPrefix(order, "random") {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					binary.BigEndian.PutUint64(key, x)
					binary.BigEndian.PutUint64(key[8:], x*0x9e3779b97f4a7c15)
				} else {
					binary.BigEndian.PutUint64(key[8:], uint64(i))
				}
				m.Add(uint64(i+1), base.KindSet, key, val)
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes {
		m, keys := fillBench(n)
		absent := benchKeys(n, 2)
		for _, kind := range []string{"present", "absent"} {
			probe := keys
			if kind == "absent" {
				probe = absent
			}
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				found := 0
				for i := 0; i < b.N; i++ {
					// A stride coprime to n visits keys in a cache-unfriendly order.
					if _, _, ok := m.Get(probe[(i*7919)%n], base.MaxSeqNum); ok {
						found++
					}
				}
				if want := b.N; kind == "present" && found != want {
					b.Fatalf("found %d of %d", found, want)
				}
			})
		}
	}
}

func BenchmarkIterate(b *testing.B) {
	m, _ := fillBench(100_000)
	it := m.NewIterator()
	b.Run("Next", func(b *testing.B) {
		b.ReportAllocs()
		it.First()
		for i := 0; i < b.N; i++ {
			if !it.Next() {
				it.First()
			}
		}
	})
	b.Run("Prev", func(b *testing.B) {
		b.ReportAllocs()
		it.Last()
		for i := 0; i < b.N; i++ {
			if !it.Prev() {
				it.Last()
			}
		}
	})
}

func BenchmarkSeekGE(b *testing.B) {
	m, keys := fillBench(100_000)
	seeks := make([][]byte, len(keys))
	for i, k := range keys {
		seeks[i] = base.MakeSeekKey(k, base.MaxSeqNum)
	}
	it := m.NewIterator()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it.SeekGE(seeks[(i*7919)%len(seeks)])
	}
}
