package db

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Flags shared by the reliability tests (reliability_*_test.go). The
// defaults keep the package's test run short; -long (or the individual
// flags) makes the runs RELIABILITY.md reports.
var relLong = flag.Bool("long", false, "run the reliability tests at their long sizes (crash points, every byte corrupted, long stress)")

// compactRange calls d.CompactRange; ok is always true (the tests were
// written when compaction had not landed yet).
func compactRange(d *DB, start, limit []byte) (ok bool, err error) {
	return true, d.CompactRange(start, limit)
}

// scanState reads every live key with a forward iterator.
func scanState(d *DB, ro *ReadOptions) (map[string]string, error) {
	it := d.NewIterator(ro)
	m := map[string]string{}
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		if prev != nil && string(it.Key()) <= string(prev) {
			it.Close()
			return nil, fmt.Errorf("iterator went from %q to %q: not ascending", prev, it.Key())
		}
		prev = append(prev[:0], it.Key()...)
		m[string(it.Key())] = string(it.Value())
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// entryHash fingerprints one key/value pair; a state's fingerprint is the
// XOR of its entries', so it updates in O(1) per write.
func entryHash(k, v string) uint64 {
	var d xxhash.Digest
	d.Reset()
	var lb [8]byte
	n := len(k)
	for i := range lb {
		lb[i] = byte(n >> (8 * i))
	}
	d.Write(lb[:])
	d.WriteString(k)
	d.WriteString(v)
	return d.Sum64()
}

func stateHash(m map[string]string) uint64 {
	var h uint64
	for k, v := range m {
		h ^= entryHash(k, v)
	}
	return h
}

// diffStates describes how got differs from want, briefly.
func diffStates(got, want map[string]string) string {
	var lines []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			lines = append(lines, fmt.Sprintf("  missing %q (want %.24q)", k, w))
		} else if g != w {
			lines = append(lines, fmt.Sprintf("  %q = %.24q, want %.24q", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("  extra %q = %.24q", k, g))
		}
	}
	sort.Strings(lines)
	if len(lines) > 12 {
		lines = append(lines[:12], fmt.Sprintf("  ... %d more", len(lines)-12))
	}
	if len(lines) == 0 {
		return "  (identical)"
	}
	return strings.Join(lines, "\n")
}

func cloneMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// isNotFound reports a clean miss.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
