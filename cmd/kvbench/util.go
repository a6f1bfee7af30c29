package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/workload"
)

// keyLen and maxKeyIndex are the keys' length and largest number
// (workload.FormatKey's).
const (
	keyLen      = workload.KeyLen
	maxKeyIndex = workload.MaxKeyIndex
)

// missingKey is db_bench's absent key for key number k: the real key with
// its last byte dropped. It is never written (every written key has 16
// bytes) and it sorts immediately before the keys k - k%10 .. k - k%10 + 9,
// so its neighbours are real keys: a table whose range holds them cannot
// rule it out by range, only by its filter.
func missingKey(dst []byte, k int) []byte {
	return workload.FormatKey(dst, k)[:keyLen-1]
}

// hotRange is the number of keys readhot draws from: the first 1% of the
// key range, at least one key (db_bench's (num+99)/100).
func hotRange(num int) int { return max((num+99)/100, 1) }

// progress shows a running benchmark on stderr as db_bench does ("...
// finished N ops"), with the rate and an estimate of the time left. It
// polls per-thread counters from its own goroutine twice a second, so
// the benchmark loops pay one uncontended atomic store every 256 ops,
// and it stays silent for benchmarks that end within the first second.
type progress struct {
	w     io.Writer
	name  string
	total int64
	count func() int64
	stop  chan struct{}
	wg    sync.WaitGroup
	shown atomic.Bool
}

func startProgress(w io.Writer, name string, total int64, count func() int64) *progress {
	p := &progress{w: w, name: name, total: total, count: count, stop: make(chan struct{})}
	if w == nil || w == io.Discard {
		return p
	}
	p.wg.Add(1)
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer p.wg.Done()
	start := time.Now()
	first := time.NewTimer(time.Second)
	defer first.Stop()
	select {
	case <-p.stop:
		return
	case <-first.C:
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		done := p.count()
		el := time.Since(start).Seconds()
		rate := float64(done) / el
		eta := "?"
		if rate > 0 && p.total > 0 {
			eta = time.Duration(float64(max(p.total-done, 0)) / rate * float64(time.Second)).Round(time.Second).String()
		}
		if p.total > 0 {
			fmt.Fprintf(p.w, "%-12s ... finished %d of %d ops (%.0f ops/s, ETA %s)      \r", p.name, done, p.total, rate, eta)
		} else {
			fmt.Fprintf(p.w, "%-12s ... finished %d ops (%.0f ops/s)      \r", p.name, done, rate)
		}
		p.shown.Store(true)
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// done stops the display and clears its line.
func (p *progress) done() {
	close(p.stop)
	p.wg.Wait()
	if p.shown.Load() {
		fmt.Fprintf(p.w, "%90s\r", "")
	}
}

// canonicalArgs returns args with each flag that fs knows with underscores
// but that is spelled with hyphens (--use-existing-db) rewritten to the
// underscore spelling (--use_existing_db): kvbench's flags keep db_bench's
// names, and the hyphen spellings work too (kvtool does the same). It reads
// args as fs.Parse does: the value of a non-boolean flag given as the next
// argument (--db -my-dir) is a value, not a flag, and the flags end at "--"
// or at the first argument that is not a flag; nothing after that is
// rewritten. Flags fs does not know are left for fs.Parse to reject.
func canonicalArgs(fs *flag.FlagSet, args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		dashes := 1
		if a[1] == '-' {
			dashes = 2
		}
		name, value, hasValue := strings.Cut(a[dashes:], "=")
		f := fs.Lookup(name)
		if f == nil && strings.Contains(name, "-") {
			if alt := strings.ReplaceAll(name, "-", "_"); fs.Lookup(alt) != nil {
				f = fs.Lookup(alt)
				out[i] = a[:dashes] + alt
				if hasValue {
					out[i] += "=" + value
				}
			}
		}
		if f != nil && !hasValue && !isBoolFlag(f) {
			i++ // the next argument is this flag's value
		}
	}
	return out
}

// isBoolFlag reports whether f takes no value argument (-f, -f=false), as
// package flag decides it.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
