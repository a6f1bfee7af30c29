package db

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestTableCacheMetaShortcut: a table's FileMetadata remembers its open
// entry, and a released entry (evicted, or the cache closed) is never
// handed out through it: the read goes back to the map, which reopens the
// table or reports ErrClosed.
func TestTableCacheMetaShortcut(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs})
	for i := 0; i < 100; i++ {
		if err := d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	ref := d.loadReadState()
	var f []*manifest.FileMetadata
	for _, files := range ref.rs.v.Files {
		if len(files) > 0 {
			f = files
		}
	}
	if len(f) == 0 {
		t.Fatal("no table after CompactRange")
	}
	meta := f[0]
	r1, err := d.tables.get(meta)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := meta.Opened().(*tableEntry); e == nil || e.r.Load() != r1 {
		t.Fatalf("the metadata does not remember the open entry (%v)", meta.Opened())
	}
	if r, err := d.tables.get(meta); err != nil || r != r1 {
		t.Fatalf("second get = %p, %v; want the same reader %p", r, err, r1)
	}
	// Evicted (as if obsolete): the shortcut must not return the closed
	// reader.
	d.tables.evict(meta.FileNum)
	r2, err := d.tables.get(meta)
	if err != nil {
		t.Fatal(err)
	}
	if r2 == r1 {
		t.Fatal("get after evict returned the released reader")
	}
	if _, err := d.Get([]byte("k050"), nil); err != nil {
		t.Fatalf("Get after the table was reopened: %v", err)
	}
	ref.unref()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: the reopened entry is released too.
	if r, err := d.tables.get(meta); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after Close = %p, %v; want ErrClosed", r, err)
	}
}
