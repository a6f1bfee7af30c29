package linkpath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFollow: a plain file is itself, a relative chain ends at its last
// target, a dangling link at the name it gives, and a loop stops.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("../file", filepath.Join(sub, "a")))
	must(os.Symlink(filepath.Join(sub, "a"), filepath.Join(dir, "b")))
	must(os.Symlink("missing", filepath.Join(dir, "dangling")))
	must(os.Symlink("loop2", filepath.Join(dir, "loop1")))
	must(os.Symlink("loop1", filepath.Join(dir, "loop2")))
	for in, want := range map[string]string{
		file:                           file,
		filepath.Join(dir, "b"):        file,
		filepath.Join(dir, "dangling"): filepath.Join(dir, "missing"),
	} {
		if got := Follow(in); got != want {
			t.Errorf("Follow(%s) = %s, want %s", in, got, want)
		}
	}
	if got := Follow(filepath.Join(dir, "loop1")); filepath.Dir(got) != dir {
		t.Errorf("a loop gave %s", got)
	}
}
