package db

import (
	"sync/atomic"
	"unsafe"
)

// counterShards is the number of cache-line-padded cells of a counter.
const counterShards = 16

// counter is a sum spread over padded cells, so goroutines on different
// cores that count the same event (every Get counts several) do not fight
// over one cache line. A goroutine picks its cell from the address of its
// own stack, which differs between goroutines and rarely changes; if it
// does change between two adds the cells just hold different parts of the
// same sum.
type counter struct {
	cells [counterShards]struct {
		n atomic.Int64
		_ [56]byte
	}
}

//go:nosplit
func stackShard() int {
	var x byte
	p := uintptr(unsafe.Pointer(&x))
	return int((p >> 13) % counterShards)
}

// Add adds delta to the counter.
func (c *counter) Add(delta int64) { c.cells[stackShard()].n.Add(delta) }

// Load returns the counter's sum.
func (c *counter) Load() int64 {
	var s int64
	for i := range c.cells {
		s += c.cells[i].n.Load()
	}
	return s
}
