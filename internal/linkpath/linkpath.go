// Package linkpath follows chains of symbolic links without requiring
// their last target to exist, for the tools that must not write a page
// through a link into a store (kvtool's --html, kvbench's --report).
package linkpath

import (
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinks bounds a chain, as the kernel's ELOOP limit does.
const maxLinks = 40

// Follow follows the symbolic links from path, one at a time (at most 40),
// and returns the last path reached: path itself when it is not a link,
// and the name a dangling link gives when its target does not exist.
func Follow(path string) string {
	target := path
	for i := 0; i < maxLinks; i++ {
		fi, err := os.Lstat(target)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		dest, err := os.Readlink(target)
		if err != nil {
			break
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(target), dest)
		}
		target = dest
	}
	return target
}
