package main

import (
	"math/rand/v2"
	"time"

	"github.com/bloomkv/bloomkv/bench/workload"
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
		if err := e.Put(formatKey(key[:], k), v); err != nil {
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
		k := formatKey(key[:], rng.IntN(keys))
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
		found, err := e.Seek(formatKey(key[:], rng.IntN(c.num)))
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
