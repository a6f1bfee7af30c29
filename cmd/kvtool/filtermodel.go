package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/filter"
)

// knownFilters are the filter policies kvtool reads tables with. A reader
// matches a table's filter by name only: the parameters (probes,
// fingerprint size) are stored in each filter.
func knownFilters() []filter.Policy {
	return []filter.Policy{
		filter.NewBloomPolicy(10),
		filter.NewLegacyBloomPolicy(10),
		filter.NewLevelDBBloomPolicy(10),
		filter.NewGoLevelDBBloomPolicy(10),
		filter.NewBlockedBloomPolicy(10),
		filter.NewBinaryFusePolicy(8),
	}
}

// parsePolicy reads a --filter flag: "bloom[:BITS]" (bloomkv's 64-bit
// Bloom filter), "leveldb[:BITS]" (LevelDB's Bloom filter),
// "blocked[:BITS]" (cache-line-blocked Bloom), "binaryfuse[:8|16]" or
// "fuse[:8|16]" (binary fuse, fingerprint bits) or "none"; BITS defaults
// to 10 and the fingerprint to 8. The names are kvbench's --filter_policy
// names. The empty string is nil, the store's default.
func parsePolicy(s string) (filter.Policy, error) {
	if s == "" {
		return nil, nil
	}
	name, bitsStr, hasBits := strings.Cut(s, ":")
	fuse := name == "fuse" || name == "binaryfuse"
	bits := 10
	if fuse {
		bits = 8
	}
	if hasBits {
		n, err := strconv.Atoi(bitsStr)
		if err != nil || n < filter.MinBitsPerKey || n > filter.MaxBitsPerKey {
			return nil, fmt.Errorf("bad bits per key %q in filter %q (want %d..%d)", bitsStr, s, filter.MinBitsPerKey, filter.MaxBitsPerKey)
		}
		bits = n
	}
	switch {
	case name == "bloom":
		return filter.NewBloomPolicy(bits), nil
	case name == "leveldb":
		return filter.NewLevelDBBloomPolicy(bits), nil
	case name == "blocked":
		return filter.NewBlockedBloomPolicy(bits), nil
	case fuse:
		if bits != 8 && bits != 16 {
			want := 8
			if bits > 8 {
				want = 16
			}
			return nil, fmt.Errorf("binary fuse fingerprints are 8 or 16 bits, not %d (kvbench --filter_policy=binaryfuse --bloom_bits=%d makes %d-bit ones: --filter=%s:%d)", bits, bits, want, name, want)
		}
		return filter.NewBinaryFusePolicy(bits), nil
	case name == "none":
		if hasBits {
			return nil, fmt.Errorf("filter \"none\" takes no bits per key")
		}
		return filter.None, nil
	}
	return nil, fmt.Errorf("unknown filter %q (want %s)", s, filterSyntax)
}

// filterModel is what kvtool knows of one table's filter: its parameters,
// read from the filter's own bytes, and the false-positive rate theory
// predicts for them.
type filterModel struct {
	params string  // e.g. "k=6, 10.08 bits/key"
	theory float64 // the predicted false-positive rate, when ok
	ok     bool
}

// fuseTrailerLen is the length of a binary fuse filter's trailer; its
// fingerprint size is the trailer's second-to-last byte.
const fuseTrailerLen = 15

// modelFilter describes the filter of a table whose filter block, of size
// bytes, holds the filters parts (sstable.Reader.FilterParts: one for a
// bloomkv table, one per 2 KiB of data-block offsets for a LevelDB table;
// nil when kvtool does not know the policy) built over n keys.
func modelFilter(policy string, size uint64, parts [][]byte, n uint64) filterModel {
	bitsPerKey := float64(size*8) / float64(max(n, 1))
	switch policy {
	case filter.BloomPolicyName, filter.LegacyBloomPolicyName, filter.LevelDBBloomPolicyName,
		filter.GoLevelDBBloomPolicyName, filter.BlockedBloomPolicyName:
	case filter.BinaryFusePolicyName:
		if len(parts) != 1 || n == 0 {
			return filterModel{params: "empty"}
		}
		tail := parts[0]
		if len(tail) < fuseTrailerLen {
			return filterModel{params: "truncated trailer"}
		}
		fp := int(tail[len(tail)-2])
		m := filterModel{params: fmt.Sprintf("%d-bit fingerprints, %.2f bits/key", fp, bitsPerKey)}
		switch fp {
		case 0:
			m.params += " (accepts every key)"
			m.theory, m.ok = 1, true
		case 8, 16:
			m.theory, m.ok = math.Ldexp(1, -fp), true
		}
		return m
	default:
		return filterModel{params: fmt.Sprintf("policy unknown to kvtool, %.2f bits/key", bitsPerKey)}
	}
	// Bloom filters: each a bit array, then one byte k. A LevelDB table's
	// filters share k; their bit arrays together hold the table's keys.
	k, bits, filters, mixed := 0, uint64(0), 0, false
	for _, p := range parts {
		if len(p) == 0 {
			continue // a LevelDB range where no data block starts
		}
		pk := int(p[len(p)-1])
		mixed = mixed || (filters > 0 && pk != k)
		k = pk
		filters++
		bits += uint64(len(p)-1) * 8
	}
	if filters == 0 || n == 0 {
		return filterModel{params: "empty"}
	}
	bitsPerKey = float64(bits) / float64(n)
	if mixed {
		return filterModel{params: fmt.Sprintf("%d filters of different k, %.2f bits/key", filters, bitsPerKey)}
	}
	m := filterModel{params: fmt.Sprintf("k=%d, %.2f bits/key", k, bitsPerKey)}
	if filters > 1 {
		m.params += fmt.Sprintf(" in %d filters (one per 2 KiB of data blocks)", filters)
	}
	if k < 1 || k > filter.MaxProbes {
		m.params += " (unknown encoding: may contain every key)"
		return m
	}
	m.ok = true
	if policy == filter.BlockedBloomPolicyName {
		m.theory = filter.EstimateBlockedFPR(bitsPerKey, k)
	} else {
		m.theory = filter.EstimateFPR(bitsPerKey, k)
	}
	return m
}
