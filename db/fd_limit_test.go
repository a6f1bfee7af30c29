//go:build linux

package db

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestManyTablesUnderLowFileLimit opens a store of 400 level-0 tables with
// the process's soft limit on open files lowered to 128: every table used
// to keep its descriptor, so Gets and scans failed with "too many open
// files" (issue 20: 38,979 of 42,858 Gets with 1,300 tables). A mapped
// table now closes its descriptor once mapped: every read must succeed.
// (With Options.DisableMmapReads the same test still fails: tables read
// with pread keep their descriptors.)
func TestManyTablesUnderLowFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 tables")
	}
	const tables = 400
	dir := t.TempDir()
	o := &Options{DisableAutomaticCompactions: true, L0StopWritesTrigger: 1 << 20, L0SlowdownWritesTrigger: 1 << 20}
	d := mustOpen(t, dir, o)
	for i := 0; i < tables; i++ {
		// Each table spans the whole key range, so every Get asks them all.
		for _, k := range []int{i, tables + i} {
			if err := d.Put([]byte(fmt.Sprintf("key%06d", k)), []byte(fmt.Sprintf("value%d", k)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 128
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	d = mustOpen(t, dir, o)
	defer d.Close()
	if n := d.Metrics().Levels[0].Files; n != tables {
		t.Fatalf("%d level-0 tables, want %d", n, tables)
	}
	for k := 0; k < 2*tables; k++ {
		v, err := d.Get([]byte(fmt.Sprintf("key%06d", k)), nil)
		if err != nil || string(v) != fmt.Sprintf("value%d", k) {
			t.Fatalf("Get(key%06d) = %q, %v", k, v, err)
		}
	}
	if _, err := d.Get([]byte("absent"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(absent) = %v", err)
	}
	it := d.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 2*tables {
		t.Fatalf("the scan saw %d keys (%v), want %d", n, err, 2*tables)
	}
}
