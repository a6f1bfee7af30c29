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
	cfg.prefixSize = 8 // and so seekprefix too
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
			if strings.HasPrefix(line, "| "+b+" ") && row == "" { // the first table's
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
	if !strings.Contains(s, "scanempty: every engine found keys in 0 of 1000 scans") {
		t.Errorf("scanempty found keys:\n%s", s)
	}
	// Half the prefixes are absent; the others hold 16 keys (fillseq's
	// store is gone; fillrandom and overwrite wrote most keys).
	for _, b := range scanNames {
		found := false
		for _, line := range strings.Split(s, "\n") {
			found = found || strings.HasPrefix(line, "| "+b+" ") && strings.Count(line, "keys") == 3
		}
		if !found {
			t.Errorf("no per-scan row for %s", b)
		}
	}
}

// TestNoPrefix: without --prefix_size the sequence runs as before plus
// scanempty and scanshort, and seekprefix is left out.
func TestNoPrefix(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 2000, 200
	cfg.writeBufferSize = 64 << 10
	cfg.engines = "bloomkv,pebble"
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "| seekprefix ") || !strings.Contains(s, "| scanempty ") || strings.Contains(s, "WARNING") {
		t.Errorf("output:\n%s", s)
	}
}
