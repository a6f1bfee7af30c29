package filter

import (
	"bytes"
	"slices"
	"testing"
)

// grafiteFuzzSeeds adds valid filters, their truncations and garbage.
func grafiteFuzzSeeds(f *testing.F) {
	valid := [][]byte{
		buildGrafite(16, nil),
		buildGrafite(16, [][]byte{[]byte("hello")}),
		buildGrafite(4, [][]byte{[]byte("hello"), []byte("world")}),
		buildGrafite(10, [][]byte{{}, {0}, {0, 0}, {1}, {0xff}}),
		buildGrafite(40, [][]byte{[]byte("user:0001"), []byte("user:0002"), []byte("user:0100")}),
	}
	for _, v := range valid {
		f.Add(v, []byte("hello"), []byte("hellp"))
		f.Add(v, []byte("user:0002"), []byte("user:0003"))
		f.Add(v, []byte{}, []byte{0xff})
		f.Add(v[:len(v)-1], []byte("a"), []byte("z"))
		f.Add(v[:len(v)/2], []byte("a"), []byte("z"))
	}
	f.Add([]byte{}, []byte("a"), []byte("b"))
	f.Add([]byte{grafiteVersion}, []byte("a"), []byte("b"))
	f.Add([]byte{grafiteMatchAll}, []byte("a"), []byte("b"))
	f.Add([]byte{grafiteVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte("a"), []byte("b"))
	f.Add([]byte{grafiteVersion, 0, 1, 8, 8, 56, 0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{}, []byte{1})
}

// FuzzGrafiteMayContainRange: any bytes as a filter and any range must not
// panic, and bytes the decoder rejects say true; and a filter built from
// the inputs themselves as keys has no false negative for ranges among
// them.
func FuzzGrafiteMayContainRange(f *testing.F) {
	grafiteFuzzSeeds(f)
	p := NewGrafiteRangePolicy(8)
	f.Fuzz(func(t *testing.T, filter, lo, hi []byte) {
		got := p.MayContainRange(filter, lo, hi)
		if _, st := grafiteDecode(filter); st == grafiteBad && !got {
			t.Fatalf("unreadable filter %x said false for [%q, %q)", filter, lo, hi)
		}
		keys := [][]byte{filter, lo, hi}
		slices.SortFunc(keys, bytes.Compare)
		for _, bpk := range []int{4, 16} {
			checkGrafiteBuilt(t, bpk, keys, [][]byte{lo, hi, filter, {}, append(slices.Clip(lo), 0), append(slices.Clip(hi), 0)})
		}
	})
}

// FuzzGrafiteRangeBuild builds a filter from keys cut out of data (at 0x00
// bytes after the first byte, which gives the bits per key) and checks
// ranges among the keys and the fuzzer's bounds.
func FuzzGrafiteRangeBuild(f *testing.F) {
	f.Add([]byte("\x10apple\x00apricot\x00banana"), []byte("apq"), []byte("b"))
	f.Add([]byte("\x04\x00\x00\x01\x00\x01\x01\x00\xff"), []byte{0}, []byte{1})
	f.Add([]byte("\x08user:0001\x00user:0002\x00user:0100"), []byte("user:0003"), []byte("user:0099"))
	f.Fuzz(func(t *testing.T, data, lo, hi []byte) {
		if len(data) == 0 {
			return
		}
		bpk := int(data[0] % 48)
		keys := bytes.Split(data[1:], []byte{0})
		slices.SortFunc(keys, bytes.Compare)
		bounds := append(slices.Clone(keys), lo, hi, append(slices.Clip(lo), 0), []byte{0xff, 0xff})
		for _, k := range keys {
			bounds = append(bounds, append(slices.Clip(k), 0))
		}
		checkGrafiteBuilt(t, bpk, keys, bounds)
	})
}

// checkGrafiteBuilt builds a filter of sorted keys and checks every range
// between two of bounds against them.
func checkGrafiteBuilt(t *testing.T, bpk int, keys, bounds [][]byte) {
	t.Helper()
	p := NewGrafiteRangePolicy(bpk)
	filter := buildGrafite(bpk, keys)
	if _, st := grafiteDecode(filter); st == grafiteBad {
		t.Fatalf("keys %q: the built filter %x does not decode", keys, filter)
	}
	for _, lo := range bounds {
		for _, hi := range bounds {
			if rangeHolds(keys, lo, hi) && !p.MayContainRange(filter, lo, hi) {
				t.Fatalf("keys %q bits %d: false negative for [%q, %q) in %x", keys, bpk, lo, hi, filter)
			}
		}
	}
}
