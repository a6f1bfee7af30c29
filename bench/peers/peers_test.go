package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestAllEngines runs the whole sequence on a tiny store for every engine
// and checks the table: a row per benchmark with a figure per engine, and
// identical found counts (every engine saw the same keys).
func TestAllEngines(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 5000, 1000
	cfg.writeBufferSize = 64 << 10
	cfg.compact = "true"
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if strings.Contains(s, "WARNING") {
		t.Errorf("engines disagree:\n%s", s)
	}
	for _, b := range benchNames {
		var row string
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "| "+b+" ") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("no row for %s", b)
			continue
		}
		// benchmark, 3 engines, 2 ratios.
		if cells := strings.Split(strings.Trim(row, "|"), "|"); len(cells) != 6 {
			t.Errorf("row %q has %d cells, want 6", row, len(cells))
		}
	}
	if !strings.Contains(s, "readmissing: every engine found 0 of 1000") {
		t.Errorf("readmissing found absent keys:\n%s", s)
	}
}
