package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiGetVsGet runs multimissing and multiget with --multiget_vs_get:
// every other batch goes to a loop of Get, in the pattern the flag gives
// (one of each pair, the loop first in even pairs), so the MultiGet
// batches' keys are the benchmark's ops and the loop's are counted apart;
// the read-path line sees both. Without the flag there is no comparison
// and every key is an op.
func TestMultiGetVsGet(t *testing.T) {
	const reads, batch = 2000, 16
	for _, vs := range []bool{true, false} {
		dir := t.TempDir()
		jsonPath := filepath.Join(t.TempDir(), "run.json")
		args := []string{"--db=" + filepath.Join(dir, "db"), "--num=5000", "--reads=2000", "--batch_size=16",
			"--benchmarks=fillrandom,compact,multimissing,multiget", "--compare_no_filter=false", "--json=" + jsonPath}
		if vs {
			args = append(args, "--multiget_vs_get")
		}
		stdout, stderr, status := kvbenchCmd(t, args...)
		if status != 0 {
			t.Fatalf("kvbench %v: status %d\n%s\n%s", args, status, stdout, stderr)
		}
		if got := strings.Count(stdout, "in alternation with a loop of Get"); got != map[bool]int{true: 2, false: 0}[vs] {
			t.Fatalf("--multiget_vs_get=%v: %d comparison lines\n%s", vs, got, stdout)
		}
		raw, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		var rep report
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		// 125 batches: pair p is batches 2p and 2p+1, the loop's the
		// first of an even pair and the second of an odd one, and the
		// last batch (124, an even pair's first) is the loop's.
		const loopBatches = 63
		for _, r := range rep.Results {
			if r.Name != "multimissing" && r.Name != "multiget" {
				continue
			}
			if !vs {
				if r.VsGet != nil || r.Ops != reads {
					t.Fatalf("%s without --multiget_vs_get: comparison %+v, %d ops (want none, %d)", r.Name, r.VsGet, r.Ops, reads)
				}
				continue
			}
			v := r.VsGet
			if v == nil {
				t.Fatalf("%s: no comparison in the JSON", r.Name)
			}
			if v.LoopKeys != loopBatches*batch || v.MultiGetKeys != reads-loopBatches*batch || r.Ops != v.MultiGetKeys {
				t.Fatalf("%s: %d loop keys and %d MultiGet keys (%d ops), want %d and %d", r.Name, v.LoopKeys, v.MultiGetKeys, r.Ops, loopBatches*batch, reads-loopBatches*batch)
			}
			if v.LoopMicrosPerKey <= 0 || v.MultiGetMicrosPerKey <= 0 || v.Ratio <= 0 {
				t.Fatalf("%s: comparison %+v", r.Name, v)
			}
			switch {
			case r.Name == "multimissing" && r.Found != 0:
				t.Fatalf("multimissing found %d absent keys", r.Found)
			case r.Name == "multiget" && r.Found < r.Ops/2:
				t.Fatalf("multiget found %d of %d", r.Found, r.Ops)
			}
			// Nearly every key of both halves reaches a filter (a few
			// fall outside every table): the read path counts the loop's
			// lookups too, where the MultiGet batches alone hold half.
			if rp := r.ReadPath; rp == nil || rp.FilterChecks < reads*3/4 {
				t.Fatalf("%s: read path %+v, want about %d filter checks", r.Name, rp, reads)
			}
		}
	}
}
