package db

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// benchStores maps a key count to a store built once per test binary: a
// benchmark function runs several times (b.N = 1 first), and b.TempDir
// is removed after each run.
var (
	benchStores sync.Map
	benchRoot   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// benchDB returns a store of n keys ("%016d" of 0, 2, 4, ...; 100-byte
// values), flushed and compacted, reopened so reads start cold.
func benchDB(b *testing.B, n int) *DB {
	b.Helper()
	key := fmt.Sprint(n)
	dir, ok := benchStores.Load(key)
	if !ok {
		if benchRoot == "" {
			r, err := os.MkdirTemp("", "bloomkv-bench-")
			if err != nil {
				b.Fatal(err)
			}
			benchRoot = r
		}
		d := fmt.Sprintf("%s/%d", benchRoot, n)
		db := mustOpen(b, d, nil)
		rng := rand.New(rand.NewSource(1))
		val := make([]byte, 100)
		var batch Batch
		for _, i := range rng.Perm(n) {
			rng.Read(val[:50])
			copy(val[50:], val[:50])
			batch.Put([]byte(fmt.Sprintf("%016d", 2*i)), val)
			if batch.Count() == 1000 {
				if err := db.Write(&batch, nil); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		db.Write(&batch, nil)
		if err := db.CompactRange(nil, nil); err != nil {
			b.Fatal(err)
		}
		db.Close()
		benchStores.Store(key, d)
		dir = d
	}
	return mustOpen(b, dir.(string), nil)
}

func BenchmarkGet(b *testing.B) {
	const n = 200000
	for _, tc := range []struct {
		name    string
		present bool
	}{{"present", true}, {"absent", false}} {
		b.Run(tc.name, func(b *testing.B) {
			d := benchDB(b, n)
			defer d.Close()
			keys := make([][]byte, 4096)
			rng := rand.New(rand.NewSource(2))
			for i := range keys {
				k := 2 * rng.Intn(n)
				if !tc.present {
					k++
				}
				keys[i] = []byte(fmt.Sprintf("%016d", k))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := d.Get(keys[i&4095], nil)
				if tc.present && err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetParallel(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewSource(rand.Int63()))
		var k [16]byte
		for pb.Next() {
			copy(k[:], fmt.Sprintf("%016d", 2*rng.Intn(n)))
			if _, err := d.Get(k[:], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPut(b *testing.B) {
	d := mustOpen(b, b.TempDir(), nil)
	defer d.Close()
	rng := rand.New(rand.NewSource(3))
	val := make([]byte, 100)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", rng.Intn(1<<30)))
	}
	b.ReportAllocs()
	b.SetBytes(116)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Put(keys[i&(1<<16-1)], val, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeekL0 seeks a new iterator per operation on a store whose data
// sits in several overlapping level-0 tables (db_bench's seekrandom).
func BenchmarkSeekL0(b *testing.B) {
	d := mustOpen(b, b.TempDir(), &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	rng := rand.New(rand.NewSource(4))
	val := make([]byte, 100)
	const n = 600000
	for t := 0; t < 6; t++ {
		for i := 0; i < n/6; i++ {
			d.Put([]byte(fmt.Sprintf("%016d", rng.Intn(n))), val, nil)
		}
		d.Flush()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := d.NewIterator(nil)
		it.Seek([]byte(fmt.Sprintf("%016d", rng.Intn(n))))
		it.Close()
	}
}

// BenchmarkReadMissingFloor does only what a lookup of an absent key
// cannot avoid, on the same store as BenchmarkGet/absent: the memtable
// probes, and one filter probe per table whose key range holds the key.
// BenchmarkGet/absent divided by this is the read path's overhead.
func BenchmarkReadMissingFloor(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	keys := make([][]byte, 4096)
	rng := rand.New(rand.NewSource(2))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", 2*rng.Intn(n)+1))
	}
	ref := d.loadReadState()
	rs := ref.rs
	defer ref.unref()
	type table struct {
		smallest, largest []byte
		r                 interface{ MayContain([]byte) bool }
	}
	var tables []table
	for _, files := range rs.v.Files {
		for _, f := range files {
			r, err := d.tables.get(f)
			if err != nil {
				b.Fatal(err)
			}
			tables = append(tables, table{base.UserKey(f.Smallest), base.UserKey(f.Largest), r})
		}
	}
	seq := d.visibleSeq.Load()
	b.ReportAllocs()
	b.ResetTimer()
	hits := 0
	for i := 0; i < b.N; i++ {
		k := keys[i&4095]
		if _, _, ok := rs.mem.Get(k, seq); ok {
			hits++
		}
		for _, t := range tables {
			if bytes.Compare(k, t.smallest) >= 0 && bytes.Compare(k, t.largest) <= 0 && t.r.MayContain(k) {
				hits++
			}
		}
	}
	if hits > b.N/10 {
		b.Fatalf("%d filter hits for %d absent keys", hits, b.N)
	}
}
