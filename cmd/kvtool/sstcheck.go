package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
)

func runSSTCheck(args []string, stdout, stderr io.Writer) int {
	f := newFlags("sst check", "kvtool sst check [flags] FILE",
		"Verifies the table FILE: the checksum of every block, the order of its\nkeys, and that its filter says \"may contain\" for every key it holds. Then\nit measures the filter's false-positive rate: it asks the filter about\n--probes keys that are not in the table (each a real key with bytes\nappended) and compares the rate with the theoretical (1-e^(-kn/m))^k for\nthe filter's m bits, k probes and n distinct keys. Corruption, or a key the\nfilter denies, gives exit status 1; the rate itself is only reported.\nA LevelDB table (NNNNNN.ldb) keeps one filter per 2 KiB of data blocks:\na key is asked of the filter of the block it would be in, as a lookup\nasks it, and the theory is that of their bits together.")
	probes := f.Int("probes", 100000, "number of absent keys to ask the filter about")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	if *probes < 0 {
		fmt.Fprintf(stderr, "kvtool sst check: --probes must not be negative\n")
		return exitUsage
	}
	t, err := openTableFile(pos[0])
	if err != nil {
		return fail(stderr, "sst check", err)
	}
	defer t.close()
	if err := t.r.VerifyChecksums(); err != nil {
		return fail(stderr, "sst check", fmt.Errorf("%s: %w", t.path, err))
	}
	p := t.props
	tombstones := ""
	if n := len(t.r.RangeDels()); n > 0 {
		// The reader decoded them when it opened the table, checking
		// that each is a non-empty range and that they are in order.
		tombstones = ", " + countOf(uint64(n), "range tombstone")
	}
	fmt.Fprintf(stdout, "checksums: ok (%d data blocks, %d entries%s)\n", len(t.layout.Data), p.NumEntries, tombstones)

	keys, err := distinctUserKeys(t.r)
	if err != nil {
		return fail(stderr, "sst check", fmt.Errorf("%s: %w", t.path, err))
	}
	if !t.r.HasFilter() {
		if p.FilterPolicy == "" {
			fmt.Fprintf(stdout, "filter: none (every lookup in range reads the index and a data block)\n")
		} else {
			fmt.Fprintf(stdout, "filter: %s, unknown to kvtool: not measured\n", p.FilterPolicy)
		}
		return exitOK
	}
	if denied := falseNegatives(t.r, keys); denied > 0 {
		return fail(stderr, "sst check", fmt.Errorf("%s: %w", t.path,
			base.CorruptionErrorf("filter %s denies %d of the table's %d keys", p.FilterPolicy, denied, len(keys))))
	}
	fm := modelFilter(p.FilterPolicy, p.FilterSize, t.r.FilterParts(), uint64(len(keys)))
	fmt.Fprintf(stdout, "filter: %s, %d bytes, %s over %d distinct keys; no false negatives\n",
		p.FilterPolicy, p.FilterSize, fm.params, len(keys))
	st := measureFPR(t.r, keys, *probes)
	if st.probes == 0 {
		fmt.Fprintf(stdout, "false positives: not measured (no probes)\n")
		return exitOK
	}
	if !fm.ok {
		fmt.Fprintf(stdout, "false positives: %d of %d probes = %.4f%% measured; no theory for this filter\n",
			st.positives, st.probes, 100*st.rate())
		return exitOK
	}
	fmt.Fprintf(stdout, "false positives: %d of %d probes = %.4f%% measured, %.4f%% theory; %s\n",
		st.positives, st.probes, 100*st.rate(), 100*fm.theory, verdict(st, fm.theory))
	return exitOK
}

// distinctUserKeys returns the table's user keys in order, each once.
func distinctUserKeys(r *sstable.Reader) ([][]byte, error) {
	var keys [][]byte
	it := r.NewIterator()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		ukey := base.UserKey(it.Key())
		if n := len(keys); n == 0 || !bytes.Equal(keys[n-1], ukey) {
			keys = append(keys, bytes.Clone(ukey))
		}
	}
	return keys, it.Error()
}

// falseNegatives counts the keys the filter says are absent.
func falseNegatives(r *sstable.Reader, keys [][]byte) int {
	n := 0
	for _, k := range keys {
		if !r.MayContain(k) {
			n++
		}
	}
	return n
}

// fprStats is a measured false-positive rate.
type fprStats struct {
	probes, positives int
}

func (s fprStats) rate() float64 {
	if s.probes == 0 {
		return 0
	}
	return float64(s.positives) / float64(s.probes)
}

// measureFPR asks the filter about n keys absent from the table. The probes
// are derived from the table's keys (sorted, distinct): probe i is key
// i%len(keys) with uvarint(i/len(keys)) appended, skipped when the table
// holds it. The set is deterministic, so a rerun gives the same count.
func measureFPR(r *sstable.Reader, keys [][]byte, n int) fprStats {
	var s fprStats
	if len(keys) == 0 {
		return s
	}
	var probe []byte
	for i := 0; s.probes < n && i < 4*n; i++ {
		k := keys[i%len(keys)]
		probe = binary.AppendUvarint(append(probe[:0], k...), uint64(i/len(keys)))
		if _, found := slices.BinarySearchFunc(keys, probe, bytes.Compare); found {
			continue
		}
		s.probes++
		if r.MayContain(probe) {
			s.positives++
		}
	}
	return s
}

// verdict compares a measured rate with theory, in standard deviations of
// the binomial count.
func verdict(s fprStats, theory float64) string {
	sigma := math.Sqrt(theory * (1 - theory) / float64(s.probes))
	if sigma == 0 {
		return "theory is exact"
	}
	z := (s.rate() - theory) / sigma
	switch {
	case math.Abs(z) <= 3:
		return fmt.Sprintf("consistent with theory (%+.1f standard deviations)", z)
	case z > 0:
		return fmt.Sprintf("WORSE than theory (%+.1f standard deviations)", z)
	}
	return fmt.Sprintf("better than theory (%+.1f standard deviations)", z)
}
