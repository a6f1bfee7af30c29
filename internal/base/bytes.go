package base

import (
	"encoding/binary"
	"fmt"
)

// HumanBytes renders a size with a binary unit: "512B", "1.5KiB", "3.0MiB",
// "2.1GiB". The db's Metrics table and kvtool print sizes with it.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// KeyWindow returns the first 8 bytes of b as a big-endian integer, b
// zero-padded when shorter: the window of a key that searches compare as
// integers (the manifest's level index, a table's index windows). For a
// and b after a common prefix, KeyWindow(a) < KeyWindow(b) implies a < b:
// at the first byte where the padded windows differ, a's byte is the
// smaller, and if it is padding, a ended there (a proper prefix of b) or
// b's byte is real and larger. Equal windows leave the order open.
func KeyWindow(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var w uint64
	for i, c := range b {
		w |= uint64(c) << (56 - 8*uint(i))
	}
	return w
}
