package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/workload"
)

// The prefix and range filter benchmarks (issue 17): seekprefix, scanempty,
// scanshort, and seekrandom with --prefix_size and --seek_nexts.

// newRangePolicy makes the range filter of --range_filter_bits. It is the
// one place that names the range filter implementation: switch it here.
// (A variable, so that the tests can measure the scans with an exact
// range filter of their own.)
var newRangePolicy = func(bitsPerKey int) (filter.RangePolicy, error) {
	return filter.NewGrafiteRangePolicy(bitsPerKey), nil
}

// describeRange describes the range filter policy for the header.
func describeRange(p filter.RangePolicy, bitsPerKey int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s, %d bits/key", p.Name(), bitsPerKey)
}

// maxScanWidth is the widest scanempty range: its upper bound's last byte,
// ':' + width, must stay a byte.
const maxScanWidth = 0xff - ':'

// keyLayout is how key number k becomes a 16-byte key. With no prefix
// (prefixSize 0) or perPrefix 0 it is db_bench's %016d. Otherwise key k is
// prefixSize decimal digits of k/perPrefix followed by 16-prefixSize digits
// of k%perPrefix: perPrefix consecutive keys share each prefix, and keys
// sort in k's order (so fillseq still writes in key order). With
// --prefix_size=8 and the default --keys_per_prefix=16, key 1234*16+7 is
// "00001234" + "00000007".
type keyLayout struct {
	prefixSize int
	perPrefix  int
}

func (l keyLayout) split() bool { return l.prefixSize > 0 && l.perPrefix > 0 }

// validate checks that every key number below num (and the scans' keys a
// little above) has a key.
func (l keyLayout) validate(num int) error {
	switch {
	case l.prefixSize < 0 || l.prefixSize >= keyLen:
		return fmt.Errorf("--prefix_size must be in [0, %d] (keys have %d bytes)", keyLen-1, keyLen)
	case l.perPrefix < 0:
		return errors.New("--keys_per_prefix must be >= 0")
	case !l.split():
		return nil
	}
	if l.perPrefix > pow10(keyLen-l.prefixSize) {
		return fmt.Errorf("--keys_per_prefix=%d does not fit the %d-digit suffix that --prefix_size=%d leaves", l.perPrefix, keyLen-l.prefixSize, l.prefixSize)
	}
	if num/l.perPrefix >= pow10(l.prefixSize) { // num: scanshort's upper bounds reach key(num)
		return fmt.Errorf("--num=%d needs %d prefixes of --keys_per_prefix=%d keys, more than %d digits (--prefix_size) can number", num, num/l.perPrefix+1, l.perPrefix, l.prefixSize)
	}
	return nil
}

func pow10(n int) int {
	p := 1
	for ; n > 0 && p <= maxKeyIndex; n-- {
		p *= 10
	}
	return p
}

// key writes key number k into dst[:16] and returns it; it allocates
// nothing.
func (l keyLayout) key(dst []byte, k int) []byte {
	if !l.split() {
		return workload.FormatKey(dst, k)
	}
	return workload.FormatSplitKey(dst, k, l.prefixSize, l.perPrefix)
}

// prefix writes the prefix (prefixSize bytes) of key number k into dst
// and returns it: key(dst, k)[:prefixSize], without formatting the rest
// of the key (seekprefix's harness cost is every engine's).
func (l keyLayout) prefix(dst []byte, k int) []byte {
	if !l.split() {
		return l.key(dst, k)[:l.prefixSize]
	}
	dst = dst[:l.prefixSize]
	workload.FormatDigits(dst, uint64(k/l.perPrefix))
	return dst
}

// number returns the number of a key of this layout.
func (l keyLayout) number(key string) (int, bool) {
	if !l.split() {
		return keyNumber(key)
	}
	q, ok1 := keyNumber(pad(key[:min(len(key), l.prefixSize)]))
	r, ok2 := keyNumber(pad(key[min(len(key), l.prefixSize):]))
	if len(key) != keyLen || !ok1 || !ok2 || r >= l.perPrefix {
		return 0, false
	}
	return q*l.perPrefix + r, true
}

// pad left-pads s with zeros to keyLen.
func pad(s string) string {
	for len(s) < keyLen {
		s = "0" + s
	}
	return s
}

// describe is the header's Keys line.
func (l keyLayout) describe(prefix filter.Prefix) string {
	switch {
	case l.prefixSize == 0:
		return fmt.Sprintf("%d bytes each (%%016d)", keyLen)
	case !l.split():
		return fmt.Sprintf("%d bytes each (%%016d); prefix %d bytes (%s)", keyLen, l.prefixSize, prefix.Name())
	}
	return fmt.Sprintf("%d bytes each: a prefix of %d bytes, %%0%dd of k/%d, then %%0%dd of k%%%d: %d keys per prefix (%s)",
		keyLen, l.prefixSize, l.prefixSize, l.perPrefix, keyLen-l.prefixSize, l.perPrefix, l.perPrefix, prefix.Name())
}

// absentByte replaces the last byte of a real prefix (seekprefix) or key
// (scanempty) to make one no key has: ':' sorts right after '9', so the
// result lies among the real keys, inside the tables' key ranges.
const absentByte = ':'

// needsPrefix reports whether a benchmark needs --prefix_size.
func needsPrefix(name string) bool { return name == "seekprefix" }

// isScan reports whether a benchmark scans bounded ranges; its read-path
// line shows the prefix and range filters and the blocks per scan.
func isScan(name string) bool {
	switch name {
	case "seekprefix", "scanempty", "scanshort", "seekrandom":
		return true
	}
	return false
}

// seekRandom does what db_bench's seekrandom does: a new iterator per
// operation, positioned with Seek at a random key, then --seek_nexts Next
// calls; found counts the seeks that landed on the key itself. With
// --prefix_size the iterator is bounded to the key's prefix
// (db.PrefixBounds), as RocksDB's prefix seeks are, so the prefix (and the
// range) filter may skip tables.
func (b *bench) seekRandom(t *thread) error {
	p := b.cfg.prefixSize
	for i := 0; i < b.cfg.reads; i++ {
		key := b.keys.key(t.key[:], t.rng.IntN(b.cfg.num))
		st := t.start()
		var ro *db.ReadOptions
		if p > 0 {
			lo, hi := db.PrefixBounds(key[:p])
			ro = &db.ReadOptions{LowerBound: lo, UpperBound: hi}
		}
		it := b.d.NewIterator(ro)
		ok := it.Seek(key)
		if ok && bytes.Equal(it.Key(), key) {
			t.found++
		}
		for j := 0; j < b.cfg.seekNexts && ok; j++ {
			t.bytes += int64(len(it.Key()) + len(it.Value()))
			t.scanned++
			ok = it.Next()
		}
		if err := it.Close(); err != nil {
			return err
		}
		t.finish(1, st)
	}
	return nil
}

// seekPrefix scans --reads whole prefixes, each through a new iterator
// bounded by db.PrefixBounds: the prefix of a random key, or, for
// --absent_prefix_fraction of them, that prefix with its last byte made
// ':' (absent, but among the real prefixes). found counts the scans that
// found a key.
func (b *bench) seekPrefix(t *thread) error {
	p := b.cfg.prefixSize
	for i := 0; i < b.cfg.reads; i++ {
		prefix := b.keys.prefix(t.key[:], t.rng.IntN(b.cfg.num))
		if t.rng.Float64() < b.cfg.absentPrefixFraction {
			prefix[p-1] = absentByte
		}
		st := t.start()
		lo, hi := db.PrefixBounds(prefix)
		if err := b.scanRange(t, lo, hi); err != nil {
			return err
		}
		t.finish(1, st)
	}
	return nil
}

// emptyRange returns scanempty's range for key number k: the width keys
// that follow key(k) with its last byte made '9', read as 16-byte integers
// ([K+1, K+1+width)): key(k) with its last byte ':' up to (excluding) ':' +
// width. No key has those bytes, and the range lies between key(k) and the
// next key with other first 15 bytes.
func (b *bench) emptyRange(lo, hi []byte, k int) ([]byte, []byte) {
	lo = b.keys.key(lo, k)
	hi = append(hi[:0], lo...)
	lo[keyLen-1] = absentByte
	hi[keyLen-1] = absentByte + byte(b.cfg.scanWidth)
	return lo, hi
}

// scanEmpty scans --reads ranges that hold no key (emptyRange of a random
// key number).
func (b *bench) scanEmpty(t *thread) error {
	for i := 0; i < b.cfg.reads; i++ {
		lo, hi := b.emptyRange(t.key[:], t.hi[:], t.rng.IntN(b.cfg.num))
		st := t.start()
		if err := b.scanRange(t, lo, hi); err != nil {
			return err
		}
		t.finish(1, st)
	}
	return nil
}

// scanShort scans --reads ranges [key(k), key(k+--scan_width)) of a random
// k: about --scan_width keys after a fillseq, about 63% of that after a
// fillrandom.
func (b *bench) scanShort(t *thread) error {
	n := max(b.cfg.num-b.cfg.scanWidth+1, 1)
	for i := 0; i < b.cfg.reads; i++ {
		k := t.rng.IntN(n)
		lo, hi := b.keys.key(t.key[:], k), b.keys.key(t.hi[:], k+b.cfg.scanWidth)
		st := t.start()
		if err := b.scanRange(t, lo, hi); err != nil {
			return err
		}
		t.finish(1, st)
	}
	return nil
}

// scanRange reads every entry of [lo, hi) through a new iterator with
// those bounds.
func (b *bench) scanRange(t *thread, lo, hi []byte) error {
	it := b.d.NewIterator(&db.ReadOptions{LowerBound: lo, UpperBound: hi})
	n := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		t.bytes += int64(len(it.Key()) + len(it.Value()))
		n++
	}
	if n > 0 {
		t.found++
		t.scanned += n
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}
