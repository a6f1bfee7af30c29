package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var pairedEngines = flag.String("paired_engines", "bloomkv,pebble", "BenchmarkSeekPrefixPaired: the engines to alternate (the first is the base of the ratios)")

// pairedStores holds BenchmarkSeekPrefixPaired's open stores, built once
// per test binary (a benchmark function runs more than once).
var pairedStores struct {
	once sync.Once
	err  error
	e    map[string]Engine
	dirs []string // removed by TestMain once the benchmarks have run
}

// TestMain removes BenchmarkSeekPrefixPaired's stores (a few hundred MB)
// after every test and benchmark has run: they outlive each run of the
// benchmark function, so no b.Cleanup can.
func TestMain(m *testing.M) {
	code := m.Run()
	for name, e := range pairedStores.e {
		if err := e.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "closing %s's paired store: %v\n", name, err)
		}
	}
	for _, dir := range pairedStores.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// pairedConfig is issue 17's setting: 1,000,000 keys of 16 bytes, 8-byte
// prefixes of 16 keys, 10 bits a key, bloomkv's range filter at 16 bits.
func pairedConfig() *config {
	cfg := defaultConfig()
	cfg.prefixSize, cfg.rangeFilterBits, cfg.absentPrefixFraction = 8, 16, 1
	return cfg
}

// openPairedStores fills, compacts and reopens one store per engine, as
// the peers run does before its reads.
func openPairedStores(names []string) (map[string]Engine, error) {
	cfg := pairedConfig()
	out := map[string]Engine{}
	for _, name := range names {
		open, ok := engines[name]
		if !ok {
			return nil, fmt.Errorf("no engine %q", name)
		}
		dir, err := os.MkdirTemp("", "peers-paired-"+name+"-")
		if err != nil {
			return nil, err
		}
		pairedStores.dirs = append(pairedStores.dirs, dir)
		e, err := open(dir, cfg.settings)
		if err != nil {
			return nil, err
		}
		if _, err := fill(e, cfg, newRand(cfg, 2), true); err != nil {
			return nil, err
		}
		if err := e.Compact(); err != nil {
			return nil, err
		}
		if err := e.Close(); err != nil {
			return nil, err
		}
		if e, err = open(dir, cfg.settings); err != nil {
			return nil, err
		}
		out[name] = e
	}
	return out, nil
}

// pairedSlice is how long each engine scans before the next one takes
// its turn.
const pairedSlice = 25 * time.Millisecond

// BenchmarkSeekPrefixPaired runs issue 17's seekprefix (absent prefixes
// only) on the engines of -paired_engines in alternation within one run:
// slices of about 25 ms of scans, each engine in turn, the order rotated
// every round. Run one after the other, the peers command's engines meet the
// machine at different moments, and on a machine whose speed drifts from
// second to second their ratio moved from 3.9x to 6.2x between runs;
// interleaved, they share its moments. One op is one slice of each
// engine. It reports each engine's ns a scan and the others' time over
// the first's (above 1 when the first is faster); the garbage collector
// runs between slices, outside the timer. The stores (1,000,000
// keys per engine) are built once, before the timer.
//
//	cd cmd/kvbench/peers && go test -run '^$' -bench SeekPrefixPaired -benchtime 200x
func BenchmarkSeekPrefixPaired(b *testing.B) {
	names := strings.Split(*pairedEngines, ",")
	pairedStores.once.Do(func() { pairedStores.e, pairedStores.err = openPairedStores(names) })
	if pairedStores.err != nil {
		b.Fatal(pairedStores.err)
	}
	cfg := pairedConfig()
	rng := newRand(cfg, 5)
	var key [keyLen]byte
	spent := make([]time.Duration, len(names))
	scans := make([]int, len(names))
	size := make([]int, len(names))
	for n := range size {
		size[n] = 1000
	}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for j := range names {
			n := (round + j) % len(names)
			e := pairedStores.e[names[n]]
			// A collection between slices, outside the timer: a slice
			// does not run while another engine's garbage is collected.
			// An engine that allocates is spared the collections its
			// own garbage would have cost it after its slice; bloomkv's
			// scans allocate nothing, so this can only lower the
			// ratios.
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
			t0 := time.Now()
			for range size[n] {
				prefix := cfg.prefix(key[:], rng.IntN(cfg.num))
				prefix[len(prefix)-1] = absentByte
				if c, _, err := e.ScanPrefix(prefix); err != nil || c != 0 {
					b.Fatalf("%s: %d keys, %v", names[n], c, err)
				}
			}
			spent[n] += time.Since(t0)
			scans[n] += size[n]
			// The next slice lasts about pairedSlice, whatever the
			// engine's speed: each one starts from caches another engine
			// used, and pays that start over as long a slice.
			size[n] = max(100, int(int64(pairedSlice)*int64(scans[n])/max(1, int64(spent[n]))))
		}
	}
	for n, name := range names {
		b.ReportMetric(float64(spent[n].Nanoseconds())/float64(scans[n]), name+"-ns/scan")
		if n > 0 {
			b.ReportMetric(float64(spent[n])/float64(scans[n])/(float64(spent[0])/float64(scans[0])), name+"/"+names[0])
		}
	}
}
