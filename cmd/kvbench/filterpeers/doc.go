// Package filterpeers benchmarks the filters of bloomkv's filter package
// side by side with the Go filter libraries people use today:
// github.com/bits-and-blooms/bloom/v3, github.com/greatroar/blobloom,
// github.com/FastFilter/xorfilter and github.com/seiflotfy/cuckoofilter.
//
// It is a module of its own so that the engine never depends on them. It
// holds the benchmarks, whose run RESULTS.md records with its command, and
// the cross-check of the filter package's own XXH3-64 against
// github.com/zeebo/xxh3 (xxh3_test.go), which the engine no longer needs.
package filterpeers
