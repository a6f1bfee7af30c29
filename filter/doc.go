// Package filter owns the per-SSTable filters of bloomkv: the Policy and
// Builder contracts, the policies themselves, and the sizing math behind
// them.
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
//     filter. A reader uses a filter only when it knows that name.
//   - Builders keep 64-bit (or, for the LevelDB policy, 32-bit) hashes of the
//     keys, never the keys themselves, and may be reused after Finish.
//
// Policies:
//
//   - NewBloomPolicy ("bloomkv.BloomFilter64"): a standard Bloom filter with
//     k = floor(0.69*bitsPerKey) probes clamped to [1,30], at least 64 bits,
//     the bit count a multiple of 64, keys hashed with 64-bit xxhash and probed
//     by 64-bit double hashing with fastrange reduction, so the false-positive
//     rate stays at the theoretical (1-e^(-kn/m))^k even for millions of keys
//     in one filter.
//   - NewLevelDBBloomPolicy ("leveldb.BuiltinBloomFilter2"): LevelDB's
//     built-in Bloom filter, byte for byte (its 32-bit hash, probe sequence,
//     bit layout and trailing k byte), so tables can be checked against
//     LevelDB's.
//   - None: tables get no filter; every lookup reads the table.
//
// EstimateFPR and OptimalK give the sizing math for documentation and
// benchmarks.
package filter
