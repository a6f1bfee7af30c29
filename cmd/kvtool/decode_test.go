package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

func TestEscapeAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		f    byteFormat
		want string
	}{
		{[]byte("abc"), byteFormat{}, "abc"},
		{[]byte("a\tb\nc\r\\\x00\xff"), byteFormat{}, `a\tb\nc\r\\\x00\xff`},
		{[]byte{0xde, 0xad}, byteFormat{Hex: true}, "dead"},
		{[]byte("abcdef"), byteFormat{Max: 2}, "ab...(6 bytes)"},
		{[]byte("abcdef"), byteFormat{Hex: true, Max: 1}, "61...(6 bytes)"},
		{nil, byteFormat{}, ""},
	} {
		if got := tc.f.format(tc.in); got != tc.want {
			t.Errorf("format(%q, %+v) = %q, want %q", tc.in, tc.f, got, tc.want)
		}
	}
	if got := (byteFormat{}).formatIKey(base.MakeInternalKey([]byte("k"), 7, base.KindDelete)); got != "k#7,DEL" {
		t.Errorf("formatIKey = %q", got)
	}
	for _, tc := range []struct {
		ikey []byte
		f    byteFormat
		want string
	}{
		// Shortened by the writer: a user key with the largest sequence
		// number and the seek kind, which means nothing.
		{base.MakeInternalKey([]byte("l"), base.MaxSeqNum, base.KindSeek), byteFormat{}, "l (max sequence)"},
		{base.MakeInternalKey([]byte("a\tb\xff"), base.MaxSeqNum, base.KindSeek), byteFormat{}, `a\tb\xff (max sequence)`},
		{base.MakeInternalKey([]byte("ab"), base.MaxSeqNum, base.KindSeek), byteFormat{Hex: true}, "6162 (max sequence)"},
		// A kind other than the seek kind is shown: no writer makes it.
		{base.MakeInternalKey([]byte("l"), base.MaxSeqNum, base.KindDelete), byteFormat{}, "l (max sequence, DEL)"},
		// The block's last entry: sequence number and kind are real.
		{base.MakeInternalKey([]byte("k"), 9, base.KindSet), byteFormat{}, "k#9,SET"},
		{[]byte("short"), byteFormat{}, "<malformed internal key 73686f7274>"},
	} {
		if got := tc.f.formatSeparator(tc.ikey); got != tc.want {
			t.Errorf("formatSeparator(%q, %+v) = %q, want %q", tc.ikey, tc.f, got, tc.want)
		}
		if strings.Contains(tc.f.formatSeparator(tc.ikey), "72057594037927935") {
			t.Errorf("formatSeparator(%q) prints the largest sequence number as a number", tc.ikey)
		}
	}
	if got := (byteFormat{}).formatIKey([]byte("short")); got != "<malformed internal key 73686f7274>" {
		t.Errorf("formatIKey of a malformed key = %q", got)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in       string
		name     string
		bits, ok int // ok: 0 error, 1 ok
	}{
		{"", "", 0, 1},
		{"bloom", filter.BloomPolicyName, 10, 1},
		{"bloom:20", filter.BloomPolicyName, 20, 1},
		{"leveldb:7", filter.LevelDBBloomPolicyName, 7, 1},
		{"blocked:14", filter.BlockedBloomPolicyName, 14, 1},
		{"none", "", 0, 1},
		{"none:3", "", 0, 0},
		{"bloom:0", "", 0, 0},
		{"bloom:x", "", 0, 0},
		{"ribbon", "", 0, 0},
	} {
		p, err := parsePolicy(tc.in)
		if (err == nil) != (tc.ok == 1) {
			t.Errorf("parsePolicy(%q) error %v", tc.in, err)
			continue
		}
		if err != nil || p == nil || filter.IsNone(p) {
			continue
		}
		if p.Name() != tc.name || p.(filter.BitsPerKeyer).BitsPerKey() != tc.bits {
			t.Errorf("parsePolicy(%q) = %s/%d", tc.in, p.Name(), p.(filter.BitsPerKeyer).BitsPerKey())
		}
	}
	if p, _ := parsePolicy("none"); !filter.IsNone(p) {
		t.Errorf("parsePolicy(none) is not filter.None")
	}
	// kvbench's name for binary fuse, and kvtool's short one.
	for _, tc := range []struct {
		in string
		fp int
	}{{"binaryfuse", 8}, {"binaryfuse:16", 16}, {"fuse", 8}, {"fuse:16", 16}} {
		p, err := parsePolicy(tc.in)
		if err != nil || p.Name() != filter.BinaryFusePolicyName || p.(interface{ FingerprintBits() int }).FingerprintBits() != tc.fp {
			t.Errorf("parsePolicy(%q) = %v, %v; want %s with %d-bit fingerprints", tc.in, p, err, filter.BinaryFusePolicyName, tc.fp)
		}
	}
	// A budget kvbench would turn into a fingerprint size is refused,
	// naming the fingerprint kvbench would have used.
	if _, err := parsePolicy("binaryfuse:10"); err == nil || !strings.Contains(err.Error(), "--filter=binaryfuse:16") {
		t.Errorf("parsePolicy(binaryfuse:10) error %v, want one suggesting binaryfuse:16", err)
	}
}

// TestDecodersOnGarbage feeds random bytes to kvtool's own batch decoder,
// and tables with damaged tails (meta blocks, index, footer) to the
// tables' readers through openTableFile (which reads each table's layout
// and properties through package sstable): they must return errors, never
// panic.
func TestDecodersOnGarbage(t *testing.T) {
	dir := buildStore(t, nil)
	table, err := os.ReadFile(oneFile(t, dir, ".sst"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(64))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		decodeBatch(b)
	}
	path := filepath.Join(t.TempDir(), "000001.sst")
	for i := 0; i < 300; i++ {
		d := bytes.Clone(table)
		for n := rng.IntN(4) + 1; n > 0; n-- {
			d[len(d)-1-rng.IntN(min(len(d), 600))] = byte(rng.Uint32())
		}
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		if tbl, err := openTableFile(path); err == nil {
			tbl.close()
		}
	}
}
