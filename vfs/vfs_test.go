package vfs

import (
	"io"
	"path/filepath"
	"testing"
)

func testFS(t *testing.T, fs FS, dir string) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Join(dir, "a")
	f, err := fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello world")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Size(); n != 11 {
		t.Fatalf("size %d", n)
	}
	f.Close()
	if err := fs.Rename(p, Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Open(p); err == nil {
		t.Fatal("old name still opens")
	}
	r, err := fs.Open(Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if n, err := r.ReadAt(buf, 6); n != 5 || string(buf) != "world" || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt: %d %q %v", n, buf, err)
	}
	all, err := io.ReadAll(r)
	if err != nil || string(all) != "hello world" {
		t.Fatalf("ReadAll: %q %v", all, err)
	}
	r.Close()
	names, err := fs.List(dir)
	if err != nil || len(names) != 1 || names[0] != "b" {
		t.Fatalf("List: %v %v", names, err)
	}
	l, err := fs.Lock(Join(dir, "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Lock(Join(dir, "LOCK")); err == nil {
		t.Fatal("second lock succeeded")
	}
	l.Close()
	l2, err := fs.Lock(Join(dir, "LOCK"))
	if err != nil {
		t.Fatalf("relock: %v", err)
	}
	l2.Close()
	if err := fs.Remove(Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(Join(dir, "b")); err == nil {
		t.Fatal("removed file stats")
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func TestOSFS(t *testing.T)  { testFS(t, Default, filepath.Join(t.TempDir(), "d")) }
func TestMemFS(t *testing.T) { testFS(t, NewMem(), "/x/d") }
