package db

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// Outcomes of a LookupTrace and of its steps.
const (
	// OutcomeFound: the step (or the lookup) found a value.
	OutcomeFound = "found"
	// OutcomeDeleted: the newest entry the read sees is a deletion, or an
	// entry older than a range tombstone over the key.
	OutcomeDeleted = "deleted"
	// OutcomeNotFound: the lookup found no entry (a lookup's outcome).
	OutcomeNotFound = "not found"
	// OutcomeError: the lookup failed (see LookupTrace.Err).
	OutcomeError = "error"

	// OutcomeMiss: a memtable holds no entry for the key.
	OutcomeMiss = "miss"
	// OutcomeOutsideRange: the key is outside the table's key range; the
	// table is not opened.
	OutcomeOutsideRange = "outside key range"
	// OutcomeOlderThanTombstone: every entry of the table is older than
	// the range tombstone over the key; the table is not opened.
	OutcomeOlderThanTombstone = "older than range tombstone"
	// OutcomeFilterNo: the table's filter says the key is not there; no
	// block is read.
	OutcomeFilterNo = "filter: no"
	// OutcomeFalsePositive: the filter said "maybe" and the data block
	// did not hold the key.
	OutcomeFalsePositive = "false positive"
	// OutcomeAbsent: a table without a filter was read and did not hold
	// the key.
	OutcomeAbsent = "absent"
)

// A LookupTrace is what ExplainGet saw on its way through the tree, in the
// order it went: the memtables, then the tables newest first, level by
// level, until one answered.
type LookupTrace struct {
	Key []byte `json:"key"`
	// Seq is the sequence number the lookup read at.
	Seq uint64 `json:"seq"`
	// Outcome is OutcomeFound, OutcomeDeleted, OutcomeNotFound or
	// OutcomeError.
	Outcome string `json:"outcome"`
	// Err is the lookup's error, for OutcomeError.
	Err string `json:"error,omitempty"`
	// RangeTombstoneSeq is the sequence number of the newest range
	// tombstone over the key that the read sees (0: none): every entry
	// older than it is deleted.
	RangeTombstoneSeq uint64        `json:"range_tombstone_seq,omitempty"`
	Steps             []TraceStep   `json:"steps"`
	Elapsed           time.Duration `json:"elapsed_ns"`
}

// A TraceStep is one place a lookup looked: a memtable or a table.
type TraceStep struct {
	// Where is "memtable", "frozen memtable" or "table".
	Where string `json:"where"`
	// Level and FileNum name the table (Level is -1 for a memtable).
	Level   int    `json:"level"`
	FileNum uint64 `json:"file,omitempty"`
	// Smallest and Largest are the table's user-key range.
	Smallest []byte `json:"smallest,omitempty"`
	Largest  []byte `json:"largest,omitempty"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// FilterPolicy and FilterBitsPerKey describe the table's filter when
	// the lookup asked it ("" when the table has none it can use);
	// FilterMayContain is its answer.
	FilterPolicy     string  `json:"filter_policy,omitempty"`
	FilterBitsPerKey float64 `json:"filter_bits_per_key,omitempty"`
	FilterMayContain bool    `json:"filter_may_contain,omitempty"`
	// Blocks are the data blocks read (the index is always in memory).
	Blocks  []sstable.BlockRead `json:"blocks,omitempty"`
	Elapsed time.Duration       `json:"elapsed_ns"`
}

// ExplainGet performs Get(key, ro) and returns, beside its result, a trace
// of the lookup: each memtable and table it considered, in order, whether
// each table was skipped by its key range, by a range tombstone or by its
// filter (with the filter's policy, bits per key and answer), or read
// (which data blocks: from the block cache or the file, stored and
// decoded sizes), how each ended (a filter's false positive is named as
// such), and the time spent in each. It counts in Metrics as a Get does.
// Get itself does no tracing and pays nothing for it.
func (d *DB) ExplainGet(key []byte, ro *ReadOptions) ([]byte, *LookupTrace, error) {
	tr := &LookupTrace{Key: bytes.Clone(key)}
	start := time.Now()
	v, err := d.explainGet(key, ro, tr)
	tr.Elapsed = time.Since(start)
	switch {
	case err == nil:
		tr.Outcome = OutcomeFound
	case errors.Is(err, ErrNotFound):
		if tr.Outcome == "" {
			tr.Outcome = OutcomeNotFound
		}
	default:
		tr.Outcome, tr.Err = OutcomeError, err.Error()
	}
	return v, tr, err
}

func (d *DB) explainGet(key []byte, ro *ReadOptions, tr *LookupTrace) ([]byte, error) {
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		return nil, ErrClosed
	}
	ref := d.loadReadState()
	defer ref.unref()
	seq, err := d.readSeq(ro)
	if err != nil {
		return nil, err
	}
	tr.Seq = seq
	rs := ref.rs
	d.m.gets.Add(1)
	var del uint64 // the newest range tombstone over key the read sees
	if rs.hasRangeDels() {
		frozen, err := rs.rangeDels()
		if err != nil {
			return nil, err
		}
		del, _ = frozen.MaxSeq(key, seq)
		if q, ok := rs.mem.RangeDels().MaxSeq(key, seq); ok && q > del {
			del = q
		}
	}
	tr.RangeTombstoneSeq = del
	// answer turns the entry a step found into the lookup's result.
	answer := func(st *TraceStep, v []byte, eseq uint64, kind base.Kind) ([]byte, error) {
		if kind == base.KindDelete || eseq < del {
			st.Outcome, tr.Outcome = OutcomeDeleted, OutcomeDeleted
			return nil, ErrNotFound
		}
		st.Outcome = OutcomeFound
		return v, nil
	}
	for i, mem := range [2]*memtable.MemTable{rs.mem, rs.imm} {
		if mem == nil {
			continue
		}
		t0 := time.Now()
		st := TraceStep{Where: "memtable", Level: -1, Outcome: OutcomeMiss}
		if i == 1 {
			st.Where = "frozen memtable"
		}
		v, eseq, kind, ok := mem.GetEntry(key, seq)
		var res []byte
		if ok {
			res, err = answer(&st, v, eseq, kind)
			if err == nil {
				res = bytes.Clone(res)
			}
		}
		st.Elapsed = time.Since(t0)
		tr.Steps = append(tr.Steps, st)
		if ok {
			return res, err
		}
	}
	var buf [64]byte
	seek := base.AppendInternalKey(buf[:0], key, seq, base.KindSeek)
	for level := 0; level < manifest.NumLevels; level++ {
		files := rs.v.Files[level]
		if level > 0 {
			f := rs.v.FindFile(level, key)
			if f == nil {
				continue
			}
			files = []*manifest.FileMetadata{f}
		}
		for _, f := range files {
			t0 := time.Now()
			st := TraceStep{Where: "table", Level: level, FileNum: f.FileNum,
				Smallest: base.UserKey(f.Smallest), Largest: base.UserKey(f.Largest)}
			v, done, err := d.explainTable(level, f, key, seek, del, &st, answer)
			st.Elapsed = time.Since(t0)
			tr.Steps = append(tr.Steps, st)
			if done || err != nil {
				return v, err
			}
		}
	}
	return nil, ErrNotFound
}

// explainTable is one table's step of explainGet; done reports that the
// table answered the lookup.
func (d *DB) explainTable(level int, f *manifest.FileMetadata, key, seek []byte, del uint64, st *TraceStep,
	answer func(*TraceStep, []byte, uint64, base.Kind) ([]byte, error)) (v []byte, done bool, err error) {
	if del > 0 && f.LargestSeq < del {
		st.Outcome = OutcomeOlderThanTombstone
		return nil, false, nil
	}
	if bytes.Compare(key, base.UserKey(f.Smallest)) < 0 || bytes.Compare(key, base.UserKey(f.Largest)) > 0 {
		st.Outcome = OutcomeOutsideRange
		return nil, false, nil
	}
	r, maybe, err := d.tableMayContain(level, f, key)
	if err != nil {
		st.Outcome = OutcomeError
		return nil, true, err
	}
	if r.HasFilter() {
		st.FilterPolicy = r.FilterPolicyName()
		st.FilterBitsPerKey = r.Properties().FilterBitsPerKey
		st.FilterMayContain = maybe
	}
	if !maybe {
		st.Outcome = OutcomeFilterNo
		return nil, false, nil
	}
	val, eseq, kind, ok, blocks, err := r.GetTraced(seek, key, nil)
	st.Blocks = blocks
	if err != nil {
		st.Outcome = OutcomeError
		return nil, true, wrapf(err, "table %06d", f.FileNum)
	}
	if !ok {
		st.Outcome = OutcomeAbsent
		if r.HasFilter() {
			st.Outcome = OutcomeFalsePositive
		}
		return nil, false, nil
	}
	if r.HasFilter() {
		d.m.levels[level].filterTruePositives.Add(1)
	}
	v, err = answer(st, val, eseq, kind)
	return v, true, err
}

// Summary counts a trace's tables by what became of them.
func (t *LookupTrace) Summary() (filterNo, falsePositives, blocksRead, blocksCached int) {
	for _, s := range t.Steps {
		switch s.Outcome {
		case OutcomeFilterNo:
			filterNo++
		case OutcomeFalsePositive:
			falsePositives++
		}
		for _, b := range s.Blocks {
			if b.Cached {
				blocksCached++
			} else {
				blocksRead++
			}
		}
	}
	return
}

// String renders the trace as a tree, one line per step, as kvtool
// explain prints it.
func (t *LookupTrace) String() string {
	var b strings.Builder
	fno, fp, read, cached := t.Summary()
	outcome := t.Outcome
	if t.Err != "" {
		outcome += ": " + t.Err
	}
	fmt.Fprintf(&b, "get %q  →  %s  (%s skipped by filter, %s, %s read from files, %s from the cache, %s)\n",
		t.Key, outcome, plural(fno, "table"), plural(fp, "false positive"), plural(read, "data block"),
		plural(cached, "data block"), roundDuration(t.Elapsed))
	if t.RangeTombstoneSeq > 0 {
		fmt.Fprintf(&b, "  range tombstone over the key at seq %d: older entries are deleted\n", t.RangeTombstoneSeq)
	}
	for _, s := range t.Steps {
		if s.Level < 0 {
			fmt.Fprintf(&b, "  %-18s %s\n", s.Where, s.Outcome)
			continue
		}
		fmt.Fprintf(&b, "  L%d  %06d.sst   ", s.Level, s.FileNum)
		switch s.Outcome {
		case OutcomeOutsideRange:
			fmt.Fprintf(&b, "outside [%q, %q]", s.Smallest, s.Largest)
		case OutcomeOlderThanTombstone:
			b.WriteString("every entry older than the range tombstone: skipped")
		default:
			if s.FilterPolicy != "" {
				ans := "no"
				if s.FilterMayContain {
					ans = "maybe"
				}
				fmt.Fprintf(&b, "filter %s %.1f bits/key: %s", s.FilterPolicy, s.FilterBitsPerKey, ans)
			} else {
				b.WriteString("no filter")
			}
			if s.Outcome != OutcomeFilterNo {
				b.WriteString(" → index (in memory)")
				for _, bl := range s.Blocks {
					if bl.Cached {
						fmt.Fprintf(&b, " → block @%d (cache, %s)", bl.Offset, kib(bl.DecodedSize))
					} else {
						fmt.Fprintf(&b, " → block @%d (file, %s → %s)", bl.Offset, kib(int(bl.StoredSize)), kib(bl.DecodedSize))
					}
				}
				fmt.Fprintf(&b, " → %s", s.Outcome)
			}
		}
		fmt.Fprintf(&b, "  (%s)\n", roundDuration(s.Elapsed))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func kib(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}
