package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// Adversarial review of cdd8f4a: a Reader keeps its filter policy's name
// (policyName) and the extractor its filter answers for (prefixName,
// the caller's copy of the name when equal). PrefixFiltered must be
// exactly "the table has a filter this reader uses, built with the
// extractor asked about", FilterPolicyName the policy in use, and a
// closed reader must answer like one without a filter.

// r11Table writes keys "pppp-kk" (prefixes of 4 bytes, even p only) with
// o, returning the table and its present prefixes.
func r11Table(t *testing.T, o WriterOptions) ([]byte, [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, o)
	var prefixes [][]byte
	for p := 0; p < 300; p += 2 {
		prefixes = append(prefixes, []byte(fmt.Sprintf("%04d", p)))
		for k := 0; k < 3; k++ {
			if err := w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("%04d:%02d", p, k)), 1, base.KindSet), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), prefixes
}

func TestReview11PrefixFilteredMatrix(t *testing.T) {
	ldb := filter.NewLevelDBBloomPolicy(10)
	legacy := filter.NewLegacyBloomPolicy(10)
	fixed4, fixed5, delim := filter.FixedPrefix(4), filter.FixedPrefix(5), filter.DelimitedPrefix(':')
	tables := []struct {
		name      string
		o         WriterOptions
		extractor string // the extractor the table's filter holds prefixes of
		// for DelimitedPrefix(':') the prefix is "pppp:"
		delim bool
	}{
		{"bloom+fixed4", WriterOptions{FilterPolicy: bloom10, Prefix: fixed4}, fixed4.Name(), false},
		{"bloom+delim", WriterOptions{FilterPolicy: bloom10, Prefix: delim}, delim.Name(), true},
		{"legacy+fixed4", WriterOptions{FilterPolicy: legacy, Prefix: fixed4}, fixed4.Name(), false},
		{"bloom", WriterOptions{FilterPolicy: bloom10}, "", false},
		{"nofilter+fixed4", WriterOptions{Prefix: fixed4}, "", false},
		{"none+fixed4", WriterOptions{FilterPolicy: filter.None, Prefix: fixed4}, "", false},
		{"leveldb", WriterOptions{Format: FormatLevelDB, FilterPolicy: ldb}, "", false},
		{"leveldb-nofilter", WriterOptions{Format: FormatLevelDB}, "", false},
	}
	asked := []string{"", fixed4.Name(), string([]byte(fixed4.Name())), fixed5.Name(), delim.Name(), "bogus"}
	policySets := [][]filter.Policy{nil, {bloom10}, {legacy}, {ldb}, {filter.None, bloom10}, {legacy, ldb, filter.NewBloomPolicy(3)}}
	for _, tb := range tables {
		data, prefixes := r11Table(t, tb.o)
		filterName := ""
		if tb.o.FilterPolicy != nil && !filter.IsNone(tb.o.FilterPolicy) {
			filterName = tb.o.FilterPolicy.Name()
		}
		for _, pols := range policySets {
			usable := ""
			for _, p := range pols {
				if p != nil && !filter.IsNone(p) && p.Name() == filterName && usable == "" {
					usable = p.Name()
				}
			}
			what := fmt.Sprintf("table %s, policies %d", tb.name, len(pols))
			r := openTable(t, data, ReaderOptions{Filters: pols})
			if got := r.FilterPolicyName(); got != usable {
				t.Fatalf("%s: FilterPolicyName = %q, want %q", what, got, usable)
			}
			if r.HasFilter() != (usable != "") {
				t.Fatalf("%s: HasFilter = %v", what, r.HasFilter())
			}
			if p, _ := r.Filter(); p != nil && p.Name() != r.FilterPolicyName() {
				t.Fatalf("%s: Filter's policy %q, FilterPolicyName %q", what, p.Name(), r.FilterPolicyName())
			}
			for _, a := range asked {
				want := usable != "" && tb.extractor != "" && a == tb.extractor
				if got := r.PrefixFiltered(a); got != want {
					t.Fatalf("%s: PrefixFiltered(%q) = %v, want %v", what, a, got, want)
				}
				// No present prefix is ever ruled out.
				for _, p := range prefixes {
					q := p
					if tb.delim {
						q = append(append([]byte(nil), p...), ':')
					}
					if checked, may := r.PrefixCheck(a, q); checked != want || !may {
						t.Fatalf("%s: PrefixCheck(%q, %q) = %v, %v: a present prefix", what, a, q, checked, may)
					}
					if !r.PrefixMayContain(a, q) {
						t.Fatalf("%s: PrefixMayContain(%q, %q) = false", what, a, q)
					}
				}
				// And the filter is used: most absent prefixes are ruled out.
				if want {
					out := 0
					for p := 1; p < 300; p += 2 {
						q := []byte(fmt.Sprintf("%04d", p))
						if tb.delim {
							q = append(q, ':')
						}
						if !r.PrefixMayContain(a, q) {
							out++
						}
					}
					if out < 100 {
						t.Fatalf("%s: only %d of 150 absent prefixes ruled out", what, out)
					}
				}
			}
			// Every key is still found through MayContain.
			for _, p := range prefixes {
				k := append(append([]byte(nil), p...), ":01"...)
				if !r.MayContain(k) {
					t.Fatalf("%s: MayContain(%q) = false", what, k)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			// A closed reader filters nothing and names no policy.
			if r.FilterPolicyName() != "" || r.HasFilter() {
				t.Fatalf("%s: closed: FilterPolicyName %q, HasFilter %v", what, r.FilterPolicyName(), r.HasFilter())
			}
			for _, a := range asked {
				if r.PrefixFiltered(a) {
					t.Fatalf("%s: closed: PrefixFiltered(%q)", what, a)
				}
				if checked, may := r.PrefixCheck(a, prefixes[0]); checked || !may {
					t.Fatalf("%s: closed: PrefixCheck(%q) = %v, %v", what, a, checked, may)
				}
			}
			if _, _, _, err := r.Get(base.MakeInternalKey([]byte("0000:00"), base.MaxSeqNum, base.KindSeek), []byte("0000:00")); err == nil {
				t.Fatalf("%s: Get on a closed reader succeeded", what)
			}
		}
	}
}
