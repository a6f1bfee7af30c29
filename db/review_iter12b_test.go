package db

import (
	"fmt"
	"os"
	"testing"
)

// TestReview12BenchStoresNoTempDir: with -bench_stores (4e29c58), benchDB
// builds its stores in the given directory, and TestMain removes nothing.
// It must then create no temporary directory either: one it made and
// then ignored is left behind by every run, as nothing removes it.
func TestReview12BenchStoresNoTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	keep := t.TempDir()
	oldKeep, oldRoot := *benchKeep, benchRoot
	*benchKeep, benchRoot = keep, ""
	defer func() {
		*benchKeep, benchRoot = oldKeep, oldRoot
		benchStores.Delete(fmt.Sprint(1234, FormatDefault))
	}()
	benchStores.Delete(fmt.Sprint(1234, FormatDefault))
	res := testing.Benchmark(func(b *testing.B) {
		d := benchDB(b, 1234)
		if _, err := d.Get([]byte("0000000000000002"), nil); err != nil {
			b.Fatal(err)
		}
		d.Close()
	})
	if res.N == 0 {
		t.Fatal("the benchmark failed")
	}
	if _, err := os.Stat(keep + "/1234-" + FormatDefault.String() + "/built"); err != nil {
		t.Fatalf("the store was not kept in -bench_stores' directory: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the temporary directory: %s", e.Name())
	}
}
