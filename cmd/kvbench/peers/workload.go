package main

import (
	"math/rand/v2"
	"time"

	"github.com/bloomkv/bloomkv/internal/workload"
)

// The workload loop of cmd/kvbench, cut down to what the peer comparison
// needs (cmd/kvbench is a main package and cannot be imported).

const keyLen = 16

// formatKey writes key number k as %016d into dst[:16].
func formatKey(dst []byte, k int) []byte {
	dst = dst[:keyLen]
	for i := keyLen - 1; i >= 0; i-- {
		dst[i] = '0' + byte(k%10)
		k /= 10
	}
	return dst
}

// key writes key number k into dst[:16]: %016d, or with --prefix_size=N
// N digits of k/16 then 16-N digits of k%16 (kvbench's layout with
// --keys_per_prefix=16): 16 consecutive keys share each N-byte prefix, and
// keys sort in k's order.
func (c *config) key(dst []byte, k int) []byte {
	if c.prefixSize <= 0 {
		return formatKey(dst, k)
	}
	dst = formatKey(dst, k%keysPerPrefix)
	q := k / keysPerPrefix
	for i := c.prefixSize - 1; i >= 0; i-- {
		dst[i] = '0' + byte(q%10)
		q /= 10
	}
	return dst
}

// keysPerPrefix is how many consecutive keys share a prefix with
// --prefix_size (kvbench's default --keys_per_prefix).
const keysPerPrefix = 16

// absentByte makes an absent prefix or key of a real one, replacing its
// last byte: ':' sorts right after '9', so the result lies among the real
// keys, inside the tables' key ranges (kvbench's seekprefix and scanempty).
const absentByte = ':'

// scanWidth is the width of scanshort's and scanempty's ranges
// (kvbench's default --scan_width).
const scanWidth = 16

// newRand returns the random source of one benchmark: the same for every
// engine, so every engine sees the same keys.
func newRand(c *config, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(c.seed, stream))
}

// fill writes --num values, to keys in order or drawn from [0, --num).
func fill(e Engine, c *config, rng *rand.Rand, random bool) (measurement, error) {
	gen := workload.NewValueGen(c.seed, c.compressionRatio)
	var key [keyLen]byte
	m := measurement{ops: c.num}
	t0 := time.Now()
	for i := 0; i < c.num; i++ {
		k := i
		if random {
			k = rng.IntN(c.num)
		}
		v := gen.Next(c.valueSize)
		if err := e.Put(c.key(key[:], k), v); err != nil {
			return m, err
		}
		m.bytes += int64(keyLen + len(v))
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// get looks up --reads random keys of [0, keys); missing drops each key's
// last byte, which makes it absent but sorting among present keys.
func get(e Engine, c *config, rng *rand.Rand, keys int, missing bool) (measurement, error) {
	var key [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		k := c.key(key[:], rng.IntN(keys))
		if missing {
			k = k[:keyLen-1]
		}
		n, found, err := e.Get(k)
		if err != nil {
			return m, err
		}
		if found {
			m.found++
			m.bytes += int64(len(k) + n)
		}
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// seek positions a new iterator at --reads random keys.
func seek(e Engine, c *config, rng *rand.Rand) (measurement, error) {
	var key [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		found, err := e.Seek(c.key(key[:], rng.IntN(c.num)))
		if err != nil {
			return m, err
		}
		if found {
			m.found++
		}
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// scan iterates --reads entries from the first.
func scan(e Engine, c *config, _ *rand.Rand) (measurement, error) {
	t0 := time.Now()
	n, b, err := e.Scan(c.reads)
	return measurement{ops: n, found: n, bytes: b, elapsed: time.Since(t0)}, err
}

// counted wraps a read benchmark: it adds what the engine read from its
// table files meanwhile (ReadCounters) to the measurement.
func counted(e Engine, run func() (measurement, error)) (measurement, error) {
	b0, n0 := e.ReadCounters()
	m, err := run()
	b1, n1 := e.ReadCounters()
	m.blocks, m.ioBytes = -1, -1
	if b0 >= 0 {
		m.blocks = b1 - b0
	}
	if n0 >= 0 {
		m.ioBytes = n1 - n0
	}
	return m, err
}

// seekPrefix scans --reads whole prefixes: a random key's, or for
// --absent_prefix_fraction of them that prefix with its last byte made
// ':', absent but among the real ones. found counts the scans that found
// a key.
func seekPrefix(e Engine, c *config, rng *rand.Rand) (measurement, error) {
	var key [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		prefix := c.key(key[:], rng.IntN(c.num))[:c.prefixSize]
		if rng.Float64() < c.absentPrefixFraction {
			prefix[len(prefix)-1] = absentByte
		}
		n, b, err := e.ScanPrefix(prefix)
		if err != nil {
			return m, err
		}
		m.add(n, b)
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// scanEmpty scans --reads ranges of 16 keys that hold none: a random key
// with its last byte made ':' up to that byte + 16 (kvbench's scanempty).
func scanEmpty(e Engine, c *config, rng *rand.Rand) (measurement, error) {
	var lo, hi [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		c.key(lo[:], rng.IntN(c.num))
		hi = lo
		lo[keyLen-1], hi[keyLen-1] = absentByte, absentByte+scanWidth
		n, b, err := e.ScanRange(lo[:], hi[:])
		if err != nil {
			return m, err
		}
		m.add(n, b)
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// scanShort scans --reads ranges [key(k), key(k+16)) of random k.
func scanShort(e Engine, c *config, rng *rand.Rand) (measurement, error) {
	var lo, hi [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		k := rng.IntN(max(c.num-scanWidth+1, 1))
		n, b, err := e.ScanRange(c.key(lo[:], k), c.key(hi[:], k+scanWidth))
		if err != nil {
			return m, err
		}
		m.add(n, b)
	}
	m.elapsed = time.Since(t0)
	return m, nil
}

// add counts one scan that returned n entries of b bytes.
func (m *measurement) add(n int, b int64) {
	if n > 0 {
		m.found++
	}
	m.keys += n
	m.bytes += b
}
