package db

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// sstFiles lists the table files in dir.
func sstFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestGetHandsOffTableDeletion: a Get holding the last reference to a
// read state that a compaction retired hands the release (unmapping and
// deleting the compaction's inputs) to a goroutine; the tables are gone
// once it ran, and a Close right after the Get waits for it, so the store
// reopens with exactly the live tables and every key.
func TestGetHandsOffTableDeletion(t *testing.T) {
	for _, closeAtOnce := range []bool{false, true} {
		t.Run(fmt.Sprintf("close=%v", closeAtOnce), func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, dir, &Options{WriteBufferSize: 16 << 10})
			for i := 0; i < 2000; i++ {
				if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("v"), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			before := sstFiles(t, dir)
			// A Get in progress: its reference to the current state.
			ref := d.loadReadState()
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			got := sstFiles(t, dir)
			for _, f := range before {
				if !slices.Contains(got, f) {
					t.Fatalf("input %s deleted while a read held it (%v -> %v)", f, before, got)
				}
			}
			deleted := d.Metrics().TablesDeleted
			ref.unrefAsync()
			if closeAtOnce {
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				d.releases.Wait()
				if n := d.Metrics().TablesDeleted - deleted; n != int64(len(before)) {
					t.Fatalf("%d tables deleted after the last read, want the %d inputs", n, len(before))
				}
				for _, f := range sstFiles(t, dir) {
					if slices.Contains(before, f) {
						t.Fatalf("input %s still on disk after the release", f)
					}
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
			d = mustOpen(t, dir, nil)
			defer d.Close()
			for _, f := range sstFiles(t, dir) {
				if slices.Contains(before, f) {
					t.Fatalf("input %s still on disk after a reopen", f)
				}
			}
			for i := 0; i < 2000; i++ {
				if _, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil {
					t.Fatalf("k%05d: %v", i, err)
				}
			}
		})
	}
}
