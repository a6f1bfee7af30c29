package main

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/workload"
)

// The workload loop of cmd/kvbench, cut down to what the peer comparison
// needs (cmd/kvbench is a main package and cannot be imported).

const keyLen = workload.KeyLen

// key writes key number k into dst[:16]: %016d, or with --prefix_size=N
// N digits of k/16 then 16-N digits of k%16 (kvbench's layout with
// --keys_per_prefix=16): 16 consecutive keys share each N-byte prefix, and
// keys sort in k's order.
func (c *config) key(dst []byte, k int) []byte {
	if c.prefixSize <= 0 {
		return workload.FormatKey(dst, k)
	}
	return workload.FormatSplitKey(dst, k, c.prefixSize, keysPerPrefix)
}

// prefix writes the prefix (--prefix_size bytes, which must be positive)
// of key number k into dst and returns it: key(dst, k)[:prefixSize],
// without formatting the rest of the key (seekprefix's harness cost is
// every engine's).
func (c *config) prefix(dst []byte, k int) []byte {
	dst = dst[:c.prefixSize]
	workload.FormatDigits(dst, uint64(k/keysPerPrefix))
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
	return getKeys(e, c, func() int { return rng.IntN(keys) }, missing)
}

// getKeys looks up --reads keys whose numbers draw returns.
func getKeys(e Engine, c *config, draw func() int, missing bool) (measurement, error) {
	var key [keyLen]byte
	m := measurement{ops: c.reads}
	t0 := time.Now()
	for i := 0; i < c.reads; i++ {
		k := c.key(key[:], draw())
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

// coldStartReads is how many reads coldstart times after the open.
const coldStartReads = 10000

// coldStart is the first read workload after a reopen: open (the time
// the caller measured) and then coldStartReads random reads of present
// keys, so the tables' opening, filters and indexes are paid for by
// whichever of the two does it (an engine that opens tables lazily pays
// in the reads). ops/s is coldStartReads over the two together.
func coldStart(e Engine, c *config, open time.Duration) (measurement, error) {
	cc := *c
	cc.reads = min(coldStartReads, c.num)
	m, err := get(e, &cc, newRand(c, 19), c.num, false)
	m.open = open
	m.elapsed += open
	return m, err
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

// prefixUpper returns db.PrefixBounds(prefix)'s upper bound (the smallest
// key above every key with the prefix; nil, unbounded, when the prefix is
// empty or all 0xff) in buf's array, reused when it is large enough.
func prefixUpper(buf, prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			buf = append(buf[:0], prefix[:i+1]...)
			buf[i]++
			return buf
		}
	}
	return nil
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
		prefix := c.prefix(key[:], rng.IntN(c.num))
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

// readZipf looks up --reads keys drawn from a Zipf distribution over the
// key range (zipfKeys, exponent --zipf_s): a few keys are very hot, most
// are cold, as in YCSB's zipfian request distribution.
func readZipf(e Engine, c *config, rng *rand.Rand) (measurement, error) {
	z := newZipfKeys(rng, c.zipfS, c.num)
	return getKeys(e, c, z.next, false)
}

// zipfKeys draws key numbers of [0, n): rank r (0 the hottest) comes with
// probability proportional to (1+r)^-s (math/rand/v2's Zipf, which needs
// s > 1; YCSB's 0.99 is the nearest usual figure), and the ranks are
// scattered over the key range by a multiplication modulo n, a bijection,
// so that the hot keys lie in many tables and blocks rather than at the
// start of the range, where readhot reads.
type zipfKeys struct {
	z      *rand.Zipf
	n, mul uint64
}

func newZipfKeys(rng *rand.Rand, s float64, n int) *zipfKeys {
	k := &zipfKeys{z: rand.NewZipf(rng, s, 1, uint64(n-1)), n: uint64(n)}
	// A multiplier coprime with n: 2^64/phi reduced, stepped up until
	// it is.
	k.mul = 0x9e3779b97f4a7c15%k.n | 1
	for gcd(k.mul, k.n) != 1 {
		k.mul += 2
	}
	return k
}

func (k *zipfKeys) next() int {
	hi, lo := bits.Mul64(k.z.Uint64(), k.mul)
	return int(bits.Rem64(hi, lo, k.n))
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// readWhileWriting runs --threads readers, each looking up --reads random
// keys of the key range (readrandom; for --duration instead when it is
// set) and timing every Get, while one writer puts random keys at
// --write_rate writes per second (paceWrites). The readers start once the
// writer has written, and the writer stops when they are done. The
// measurement counts the readers' Gets; its lat holds their latencies,
// writes what the writer did.
func readWhileWriting(e Engine, c *config) (measurement, error) {
	var stop atomic.Bool
	type writerResult struct {
		writes  int64
		elapsed time.Duration
		err     error
	}
	done := make(chan writerResult, 1)
	started := make(chan struct{})
	go func() {
		n, d, err := paceWrites(e, c, &stop, started)
		done <- writerResult{n, d, err}
	}()
	<-started // the readers read while the writer writes

	threads := max(c.threads, 1)
	lats := make([][]int64, threads)
	found := make([]int, threads)
	nbytes := make([]int64, threads)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	t0 := time.Now()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRand(c, 100+uint64(t))
			lat := make([]int64, 0, c.reads)
			var key [keyLen]byte
			for i := 0; c.duration > 0 || i < c.reads; i++ {
				k := c.key(key[:], rng.IntN(c.num))
				st := time.Now()
				if c.duration > 0 && st.Sub(t0) >= c.duration {
					break
				}
				n, ok, err := e.Get(k)
				lat = append(lat, int64(time.Since(st)))
				if err != nil {
					errs[t] = err
					break
				}
				if ok {
					found[t]++
					nbytes[t] += int64(len(k) + n)
				}
			}
			lats[t] = lat
		}()
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(t0)}
	stop.Store(true)
	w := <-done
	for t := range threads {
		if errs[t] != nil {
			return m, errs[t]
		}
		m.ops += len(lats[t])
		m.found += found[t]
		m.bytes += nbytes[t]
	}
	if w.err != nil {
		return m, fmt.Errorf("writer: %w", w.err)
	}
	m.lat = newLatencies(slices.Concat(lats...))
	m.writes, m.writeElapsed = w.writes, w.elapsed
	return m, nil
}

// writeBurst is how far behind its schedule paceWrites may catch up. A
// sleep of a few microseconds takes a millisecond or more on a busy
// machine: on the 2-core machine of RESULTS.md, with no engine at all, a
// writer paced at 50,000/s achieved 42,206/s with a 1 ms bucket, 46,641/s
// with 5 ms and 49,973/s with 20 ms. (RocksDB's rate limiter refills
// every 100 ms.)
const writeBurst = 20 * time.Millisecond

// paceWrites puts random keys of the key range with values of
// --value_size until stop is set, at --write_rate writes per second (0:
// as fast as it can). The pacing is a token bucket holding writeBurst's
// worth of writes: the writer sleeps while it is ahead of the schedule,
// and when it falls behind (a write stalled, or its sleep overslept) it
// catches up by at most that burst, so the rate it achieves says whether
// the engine kept up. It returns the writes done and the time they took.
// It closes started after its first write (or its failure).
func paceWrites(e Engine, c *config, stop *atomic.Bool, started chan struct{}) (int64, time.Duration, error) {
	defer func() {
		if started != nil {
			close(started)
		}
	}()
	rng := newRand(c, 50)
	gen := workload.NewValueGen(c.seed+50, c.compressionRatio)
	var key [keyLen]byte
	var interval time.Duration
	if c.writeRate > 0 {
		interval = time.Duration(float64(time.Second) / c.writeRate)
	}
	burst := max(writeBurst, interval)
	var n int64
	start := time.Now()
	next := start
	for !stop.Load() {
		if interval > 0 {
			now := time.Now()
			if now.Before(next) {
				time.Sleep(next.Sub(now))
				continue
			}
			if now.Sub(next) > burst {
				next = now.Add(-burst)
			}
			next = next.Add(interval)
		}
		if err := e.Put(c.key(key[:], rng.IntN(c.num)), gen.Next(c.valueSize)); err != nil {
			return n, time.Since(start), err
		}
		n++
		if started != nil {
			close(started)
			started = nil
		}
	}
	return n, time.Since(start), nil
}
