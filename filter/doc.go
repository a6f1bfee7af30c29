// Package filter owns the filters of bloomkv: the per-SSTable filter
// Policy and Builder contracts and the policies themselves, the standalone
// set filters people reach for outside a table (Bloom, counting Bloom,
// cuckoo, scalable Bloom), and the sizing math behind them.
//
// # Table filters
//
// A Policy turns the user keys of one table into a filter (a byte string the
// sstable package stores in the table's filter block) and later answers
// MayContain for a key against those bytes. The contract every policy keeps:
//
//   - No false negatives: MayContain(Finish(keys), k) is true for every k
//     that was added.
//   - MayContain never panics and never allocates, whatever bytes it is
//     handed; a filter it cannot read (empty, truncated, an unknown
//     parameter) answers true, "may contain", so a damaged or foreign filter
//     can cost a read but never lose a key.
//   - A filter is self-describing: every parameter a reader needs (such as
//     the number of probes) is stored in the filter bytes, so the reader
//     needs only the policy name, which the table records next to the
//     filter. A reader uses a filter only when it knows that name. Every
//     policy has its own name, so tables written under different policies
//     can live in one store.
//   - Builders keep 64-bit (or, for the LevelDB policy, 32-bit) hashes of the
//     keys, never the keys themselves, and may be reused after Finish.
//
// Policies:
//
//   - NewBloomPolicy ("bloomkv.BloomFilter64v2"): a standard Bloom filter with
//     k = floor(0.69*bitsPerKey) probes clamped to [1,30], at least 64 bits,
//     the bit count a multiple of 64, keys hashed with 64-bit xxhash and probed
//     along a 64-bit linear congruential sequence with fastrange reduction,
//     so the false-positive rate stays at the theoretical one from one key
//     (64 bits) to millions of keys in one filter.
//   - NewLegacyBloomPolicy ("bloomkv.BloomFilter64"): the same layout with
//     the double-hashing probes bloomkv wrote until November 2026, which
//     cycle on small filters with many probes; for tables written then.
//   - NewLevelDBBloomPolicy ("leveldb.BuiltinBloomFilter2"): LevelDB's
//     built-in Bloom filter, byte for byte (its 32-bit hash, probe sequence,
//     bit layout and trailing k byte), so tables can be checked against
//     LevelDB's.
//   - NewBlockedBloomPolicy ("bloomkv.BlockedBloom3"): a cache-line-blocked
//     Bloom filter, every probe of a key in one 64-byte line, keys hashed
//     with XXH3-64: one cache miss per lookup, for a slightly higher rate
//     (0.96% at 10 bits per key).
//   - NewBinaryFusePolicy ("bloomkv.BinaryFuse"): a binary fuse filter with
//     8- or 16-bit fingerprints, 9.04 bits per key at 0.39% (8 bits, a
//     million keys), three memory reads per lookup; it needs all keys at
//     Finish.
//   - None: tables get no filter; every lookup reads the table.
//
// # Standalone filters
//
// For sets outside a table, with the API their users know: BloomFilter
// (sized like Guava's BloomFilter.create, with Union and an approximate
// count), CountingBloomFilter (4-bit saturating counters, so keys can be
// removed), CuckooFilter (4-way buckets, partial-key cuckoo hashing, delete)
// and ScalableBloomFilter (grows by adding stages, keeping the overall rate
// below its target, with RedisBloom's expansion, tightening ratio and
// non-scaling options). Their constructors never fail: arguments out of
// range are clamped as each documents, and CheckSizing reports such
// arguments to callers that prefer to refuse them; only growth options out
// of range (NewScalableBloomFilterWithOptions) are an error. A filter that
// can take no more keys says so: the Insert methods return errors wrapping
// ErrFull, or ErrTooManyCopies for a cuckoo filter's ninth copy of a key. Each encodes to a versioned binary
// form (MarshalBinary, AppendBinary) whose decoder (UnmarshalBinary) checks
// every length before it allocates and fails with an error wrapping
// ErrInvalidEncoding, never a panic.
//
// # Sizing
//
// EstimateFPR and OptimalK give the theory of a standard Bloom filter,
// OptimalBits Guava's bit count for n keys at rate p, BitsPerKeyForFPR the
// smallest budget for a target rate, and EstimateBlockedFPR the rate of a
// blocked filter.
package filter
