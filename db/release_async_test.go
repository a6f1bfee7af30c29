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

// TestGetReleaseDeletesInputsAndCloseWaits: a Get holding the last
// reference to a read state that a compaction retired hands the release
// (unmapping and deleting the compaction's inputs) to a goroutine; the
// inputs stay while the Get holds them, are gone once the release ran,
// and a Close right after the Get waits for it, so the store reopens with
// exactly the live tables and every key.
func TestGetReleaseDeletesInputsAndCloseWaits(t *testing.T) {
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

// TestOpenLoadsTablesInBackground: Open returns while its goroutine
// loads the tables; Gets racing it (and a CompactRange deleting the very
// tables it loads) answer right, no table no version holds stays in the
// table cache, and a Close right after Open waits for the loader.
func TestOpenLoadsTablesInBackground(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{WriteBufferSize: 16 << 10, DisableAutomaticCompactions: true})
	const n = 4000
	for i := 0; i < n; i++ {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%05d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		d = mustOpen(t, dir, &Options{WriteBufferSize: 16 << 10})
		if round == 4 {
			if err := d.Close(); err != nil { // at once: Close waits for the loader
				t.Fatal(err)
			}
			continue
		}
		done := make(chan error, 1)
		go func() {
			for i := 0; i < n; i += 3 {
				v, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
				if err != nil || string(v) != fmt.Sprintf("v%05d", i) {
					done <- fmt.Errorf("k%05d: %q, %v", i, v, err)
					return
				}
			}
			done <- nil
		}()
		if round == 0 {
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		d.loading.Wait()
		d.releases.Wait()
		live := 0
		d.mu.Lock()
		for _, files := range d.vs.current.Files {
			live += len(files)
		}
		d.mu.Unlock()
		if got := d.Metrics().TablesOpen; got != live {
			t.Fatalf("round %d: %d tables open in the cache, %d in the version", round, got, live)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
