package base

import (
	"sync/atomic"
	"unsafe"
)

// counterShards is the number of cache-line-padded cells of a Counter.
const (
	counterShardBits = 4
	counterShards    = 1 << counterShardBits
)

// Counter is a sum spread over cache-line-padded cells, so goroutines on
// different cores that count the same event (every Get counts several) do
// not fight over one cache line. A goroutine picks its cell from the
// address of its own stack, which differs between goroutines and rarely
// changes; if it does change between two adds, the cells just hold
// different parts of the same sum. The zero value is ready to use.
type Counter struct {
	// Cells 128 bytes apart: whatever the Counter's alignment, no two
	// cells' words share a 64-byte cache line.
	cells [counterShards]struct {
		n atomic.Int64
		_ [120]byte
	}
}

// stackShard picks a cell from the address of a local variable, hashed:
// goroutine stacks are allocated at multiples of their (power-of-two)
// size, so two goroutines running the same code differ only in high
// address bits, which a plain shift-and-mask would mostly drop.
//
//go:nosplit
func stackShard() int {
	var x byte
	p := uint64(uintptr(unsafe.Pointer(&x)))
	return int(((p >> 4) * 0x9e3779b97f4a7c15) >> (64 - counterShardBits))
}

// Add adds delta to the counter.
func (c *Counter) Add(delta int64) { c.cells[stackShard()].n.Add(delta) }

// Load returns the counter's sum. Adds that run concurrently may or may not
// be included.
func (c *Counter) Load() int64 {
	var s int64
	for i := range c.cells {
		s += c.cells[i].n.Load()
	}
	return s
}

// Inc adds one to the counter and returns the cell it used, for a DecAt
// that must undo exactly this Inc. A count kept this way never goes below
// zero in any cell, so a Load that reads zero means that no Inc is
// outstanding (or that an outstanding one was made after the Load read its
// cell).
func (c *Counter) Inc() int {
	i := stackShard()
	c.cells[i].n.Add(1)
	return i
}

// DecAt subtracts one from cell i, which an Inc returned.
func (c *Counter) DecAt(i int) { c.cells[i].n.Add(-1) }
