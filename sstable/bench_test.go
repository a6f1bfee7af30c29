package sstable

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
)

// benchModel returns n entries with db_bench-like keys (%016d) and 100-byte
// values compressible to about half.
func benchModel(n int) model {
	m := make(model, n)
	v := make([]byte, 100)
	for i := range v[:50] {
		v[i] = byte(i * 7)
	}
	for i := range m {
		m[i] = kv{base.MakeInternalKey([]byte(fmt.Sprintf("%016d", i)), uint64(n-i), base.KindSet), v}
	}
	return m
}

func BenchmarkWriterAdd(b *testing.B) {
	m := benchModel(100000)
	b.ReportAllocs()
	b.SetBytes(int64(len(m[0].key) + len(m[0].value)))
	w := NewWriter(io.Discard, WriterOptions{FilterPolicy: bloom10})
	j := 0
	for i := 0; i < b.N; i++ {
		if j == len(m) {
			b.StopTimer()
			if _, err := w.Finish(); err != nil {
				b.Fatal(err)
			}
			w = NewWriter(io.Discard, WriterOptions{FilterPolicy: bloom10})
			j = 0
			b.StartTimer()
		}
		if err := w.Add(m[j].key, m[j].value); err != nil {
			b.Fatal(err)
		}
		j++
	}
}

func benchReader(b *testing.B, n int, c *cache.Cache) (*Reader, model) {
	m := benchModel(n)
	data, _ := buildTable(b, m, WriterOptions{FilterPolicy: bloom10})
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{
		Filters: []filter.Policy{bloom10}, Cache: c, FileID: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return r, m
}

func BenchmarkReaderFindCached(b *testing.B) {
	r, m := benchReader(b, 100000, cache.New(64<<20))
	for _, e := range m { // warm the cache
		r.Find(e.key)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := m[(i*7919)%len(m)]
		k, _, ok, err := r.Find(e.key)
		if !ok || err != nil || len(k) != len(e.key) {
			b.Fatal("miss")
		}
	}
}

func BenchmarkReaderFindUncached(b *testing.B) {
	r, m := benchReader(b, 100000, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := m[(i*7919)%len(m)]
		if _, _, ok, err := r.Find(e.key); !ok || err != nil {
			b.Fatal("miss")
		}
	}
}

func BenchmarkIteratorScan(b *testing.B) {
	r, m := benchReader(b, 100000, cache.New(64<<20))
	it := r.NewIterator()
	b.ReportAllocs()
	b.SetBytes(int64(len(m[0].key) + len(m[0].value)))
	b.ResetTimer()
	ok := it.First()
	for i := 0; i < b.N; i++ {
		if !ok {
			ok = it.First()
		}
		_ = it.Key()
		ok = it.Next()
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkMayContain(b *testing.B) {
	r, m := benchReader(b, 100000, nil)
	keys := make([][]byte, 1024)
	for i := range keys {
		if i%2 == 0 {
			keys[i] = base.UserKey(m[(i*7919)%len(m)].key)
		} else {
			keys[i] = []byte(fmt.Sprintf("%016d", i*7919+len(m)))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.MayContain(keys[i&1023])
	}
}

func BenchmarkBlockSeekGE(b *testing.B) {
	var bb blockBuilder
	bb.restartInterval = DefaultBlockRestartInterval
	m := benchModel(30)
	for _, e := range m {
		bb.add(e.key, e.value)
	}
	blk := bytes.Clone(bb.finish())
	var it blockIter
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		it.init(false, blk)
		if !it.SeekGE(m[i%len(m)].key) {
			b.Fatal("miss")
		}
	}
}

// BenchmarkBuildBlockKeys measures the key index a point lookup builds
// for a data block it reads into the cache: a 4 KiB block of kvbench's
// entries (16-byte keys, 100-byte values). Compare it with a lookup that
// reads its block (BenchmarkReaderFindUncached: the read, the checksum
// and the decompression).
func BenchmarkBuildBlockKeys(b *testing.B) {
	var bb blockBuilder
	bb.restartInterval = 16
	for _, e := range benchModel(100000)[:36] {
		bb.add(e.key, e.value)
	}
	data := bytes.Clone(bb.finish())
	dst, ok := buildBlockKeys(data, nil)
	if !ok {
		b.Fatal("no index")
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst, _ = buildBlockKeys(data, dst[:0])
	}
}
