package manifest

import (
	"math/rand"
	"testing"
)

// benchVersion is a version with a few hundred files over all levels.
func benchVersion(b *testing.B) (*Version, *versionGen) {
	b.Helper()
	v, g := randomVersion(42, 400)
	return v, g
}

func BenchmarkEditEncode(b *testing.B) {
	v, _ := benchVersion(b)
	e := v.Snapshot(1, 2, 3, "bloomkv.bytewise")
	buf := e.Encode(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = e.Encode(buf[:0])
	}
}

func BenchmarkEditDecode(b *testing.B) {
	v, _ := benchVersion(b)
	buf := v.Snapshot(1, 2, 3, "bloomkv.bytewise").Encode(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	var e VersionEdit
	for b.Loop() {
		if err := e.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuilderEdit is the per-edit cost in the db: a new Builder on the
// current version, one flush-sized edit, Finish.
func BenchmarkBuilderEdit(b *testing.B) {
	v, g := benchVersion(b)
	b.Logf("%d files", len(v.AllFileNums()))
	f := g.newFile(0, 10, 20)
	e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: f.m}}}
	b.ReportAllocs()
	for b.Loop() {
		bld := NewBuilder(v)
		if err := bld.Apply(e); err != nil {
			b.Fatal(err)
		}
		if _, err := bld.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFindFile(b *testing.B) {
	v, _ := benchVersion(b)
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(slotKey(rng.Intn(210)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v.FindFile(1+i%(NumLevels-1), keys[i%len(keys)])
		i++
	}
}

func BenchmarkOverlaps(b *testing.B) {
	v, _ := benchVersion(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := []byte(slotKey(i % 200))
		v.Overlaps(i%NumLevels, k, k)
		i++
	}
}
