// Package filterpeers benchmarks the filters of bloomkv's filter package
// side by side with the Go filter libraries people use today:
// github.com/bits-and-blooms/bloom/v3, github.com/greatroar/blobloom,
// github.com/FastFilter/xorfilter and github.com/seiflotfy/cuckoofilter.
//
// It is a module of its own so that the engine never depends on them. It
// holds benchmarks only; RESULTS.md records a run and the command behind it.
package filterpeers
