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

// TailWindow is KeyWindow(ukey[cp:]) for cp <= len(ukey). When fewer than
// 8 bytes follow cp but ukey holds 8, its last 8 bytes shifted left give
// the zero-padded window in one load (a probe key shorter than the keys
// searched, as an absent key of kvbench's readmissing, takes this path).
func TailWindow(ukey []byte, cp int) uint64 {
	n := len(ukey) - cp
	switch {
	case n >= 8:
		return binary.BigEndian.Uint64(ukey[cp:])
	case len(ukey) >= 8:
		return binary.BigEndian.Uint64(ukey[len(ukey)-8:]) << (8 * uint(8-n))
	default:
		return KeyWindow(ukey[cp:])
	}
}

// WindowLowerBound returns the first i with w[i] >= p (len(w) for none),
// w non-decreasing, by a branch-free binary search: the halving steps do
// not depend on the comparisons, which pick the base with a conditional
// move, so no step waits on a mispredicted branch.
func WindowLowerBound(w []uint64, p uint64) int {
	lo, n := 0, len(w)
	for n > 1 {
		half := n >> 1
		lo += half & -b2i(w[lo+half-1] < p)
		n -= half
	}
	if n == 1 && w[lo] < p {
		lo++
	}
	return lo
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
