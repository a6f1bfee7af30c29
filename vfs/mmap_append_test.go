//go:build linux

package vfs

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestAppendMapped writes through a mapped file past several chunk and
// mapping sizes, checks what another reader of the file sees before Close
// (all written bytes, then only zeros: what a crash would leave) and that
// Close truncates the file to the bytes written.
func TestAppendMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "000001.log")
	f, err := Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := f.(MapAppender).AppendMapped()
	if err != nil {
		t.Skipf("AppendMapped: %v", err)
	}
	rng := rand.New(rand.NewSource(1))
	var want []byte
	for len(want) < 3*appendMapMin+12345 {
		p := make([]byte, rng.Intn(300_000))
		rng.Read(p)
		n, err := mf.Write(p)
		if err != nil || n != len(p) {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
		want = append(want, p...)
		if rng.Intn(10) == 0 {
			if err := mf.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if size, _ := mf.Size(); size != int64(len(want)) {
		t.Fatalf("Size() = %d, wrote %d", size, len(want))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(want) || len(got)%appendChunk != 0 || !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("before Close the file has %d bytes (want the %d written, padded to a chunk)", len(got), len(want))
	}
	if !allZeroBytes(got[len(want):]) {
		t.Fatal("the preallocated tail is not zero")
	}
	// The file runs one chunk ahead of the writes, never more.
	if ahead := len(got) - len(want); ahead < appendChunk || ahead > 2*appendChunk {
		t.Fatalf("the file is %d bytes ahead of the writes, want about one chunk (%d)", ahead, appendChunk)
	}
	if err := mf.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ = os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("after Close the file has %d bytes, want exactly the %d written", len(got), len(want))
	}
	if _, err := mf.Write([]byte("x")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if err := mf.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestAppendMappedNeedsEmptyFile: mapping starts at offset 0, so a file
// with bytes in it is refused rather than overwritten.
func TestAppendMappedNeedsEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := (osFile{f}).AppendMapped(); err == nil {
		t.Fatal("AppendMapped of a non-empty file succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "data" {
		t.Fatalf("file changed to %q", got)
	}
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
