//go:build !(cgo && cppengines)

package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestCppEnginesNeedTag: without -tags cppengines the C++ engines are not
// listed, and asking for one says how to build it.
func TestCppEnginesNeedTag(t *testing.T) {
	for _, n := range cppEngines {
		if engines[n] != nil || slices.Contains(engineOrder, n) {
			t.Errorf("%s is listed without the tag", n)
		}
		cfg := defaultConfig()
		cfg.engines = "bloomkv," + n
		err := run(cfg, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-tags cppengines") || !strings.Contains(err.Error(), n) {
			t.Errorf("--engines=%s: %v", cfg.engines, err)
		}
	}
}
