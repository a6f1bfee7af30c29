// Package workload holds what bloomkv's benchmark programs share, so that
// cmd/kvbench and the peers module (cmd/kvbench/peers) draw the same values.
package workload

import "math/rand/v2"

// ValueGen hands out values that compress to about ratio of their size:
// values are cut from a pool built of 100-byte pieces, each ratio*100
// random printable bytes followed by copies of them, so a compressor keeps
// about ratio of every value (the idea of db_bench's generator). A ValueGen
// is not safe for concurrent use; give each goroutine its own.
type ValueGen struct {
	data []byte
	pos  int
}

// NewValueGen returns a generator whose pool depends only on seed and ratio
// (clamped so every piece keeps 1 to 100 random bytes).
func NewValueGen(seed uint64, ratio float64) *ValueGen {
	rng := rand.New(rand.NewPCG(seed, 0x76616c7565))
	const pool = 1 << 20
	g := &ValueGen{data: make([]byte, 0, pool+100)}
	n := min(max(int(100*ratio+0.5), 1), 100)
	for len(g.data) < pool {
		start := len(g.data)
		for range n {
			g.data = append(g.data, byte(' '+rng.IntN(95)))
		}
		for len(g.data)-start < 100 {
			g.data = append(g.data, g.data[start:start+min(n, 100-(len(g.data)-start))]...)
		}
	}
	return g
}

// Next returns n bytes of value. The slice is valid until a later call
// needs the space again; writers copy it (Put and Batch.Put both do).
func (g *ValueGen) Next(n int) []byte {
	if n > len(g.data) {
		b := make([]byte, n)
		for i := range b {
			b[i] = g.data[i%len(g.data)]
		}
		return b
	}
	if g.pos+n > len(g.data) {
		g.pos = 0
	}
	v := g.data[g.pos : g.pos+n]
	g.pos += n
	return v
}
