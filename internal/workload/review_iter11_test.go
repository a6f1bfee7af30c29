package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Adversarial review of 7c23dd6: FormatDigits and FormatSplitKey against
// fmt, for every width and layout, at the edges of each.

// r11Digits is fmt's answer for FormatDigits: the last n digits of %0nd.
func r11Digits(n int, v uint64) string {
	s := fmt.Sprintf("%0*d", n, v)
	return s[len(s)-n:]
}

func TestReview11FormatDigits(t *testing.T) {
	vals := []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 99999999, 100000000,
		1e15 - 1, 1e15, 1e16 - 1, 1e16, 1e19 - 1, 1e19, math.MaxUint64, math.MaxUint64 - 1, 1<<63 - 1, 1 << 63}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 300 {
		vals = append(vals, rng.Uint64(), rng.Uint64N(1e8), rng.Uint64N(1000))
	}
	for n := 0; n <= 22; n++ {
		// Powers of ten around the width.
		p := uint64(1)
		for i := 0; i < n && p < math.MaxUint64/10; i++ {
			p *= 10
		}
		for _, v := range append(vals, p-1, p, p+1, 2*p-1) {
			// Guard bytes on both sides must stay untouched.
			buf := []byte(strings.Repeat("#", n+4))
			FormatDigits(buf[2:2+n], v)
			want := "##" + r11Digits(n, v) + "##"
			if string(buf) != want {
				t.Fatalf("FormatDigits(%d digits, %d) wrote %q, want %q", n, v, buf, want)
			}
		}
	}
	var b [16]byte
	if a := testing.AllocsPerRun(50, func() { FormatDigits(b[:7], 1234567) }); a != 0 {
		t.Fatalf("FormatDigits allocates %v", a)
	}
}

// TestReview11FormatSplitKey checks every prefix size with the layouts
// kvbench accepts (perPrefix up to 10^(16-prefixSize)) and the peers'
// fixed 16 keys per prefix, at the first and last keys of prefixes and at
// the largest key each layout numbers.
func TestReview11FormatSplitKey(t *testing.T) {
	pow := func(n int) int {
		p := 1
		for ; n > 0; n-- {
			p *= 10
		}
		return p
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for ps := 0; ps <= KeyLen; ps++ {
		pers := []int{1, 2, 3, 7, 16, 99, 100, 1000}
		if ps < KeyLen {
			pers = append(pers, pow(KeyLen-ps), pow(KeyLen-ps)-1)
		}
		for _, per := range pers {
			if ps < KeyLen && per > pow(KeyLen-ps) || ps == KeyLen && per != 1 {
				continue // kvbench's validate refuses the layout
			}
			// The largest k whose quotient fits ps digits.
			maxK := MaxKeyIndex
			if ps < KeyLen {
				if q := pow(ps); q <= (MaxKeyIndex+1)/per {
					maxK = q*per - 1
				}
			}
			if ps == 0 {
				maxK = per - 1
			}
			ks := []int{0, 1, per - 1, per, per + 1, 2*per - 1, maxK, maxK - 1, maxK / 2}
			for range 200 {
				ks = append(ks, rng.IntN(maxK+1))
			}
			for _, k := range ks {
				if k < 0 || k > maxK {
					continue
				}
				want := fmt.Sprintf("%0*d%0*d", ps, k/per, KeyLen-ps, k%per)
				if ps == 0 {
					want = fmt.Sprintf("%0*d", KeyLen, k%per)
				}
				if ps == KeyLen {
					want = fmt.Sprintf("%0*d", KeyLen, k/per)
				}
				if len(want) != KeyLen {
					t.Fatalf("layout %d/%d, k=%d: fmt gives %q", ps, per, k, want)
				}
				buf := []byte(strings.Repeat("#", KeyLen+3))
				got := FormatSplitKey(buf, k, ps, per)
				if string(got) != want || string(buf[KeyLen:]) != "###" {
					t.Fatalf("FormatSplitKey(%d, %d, %d) = %q (buffer %q), want %q", k, ps, per, got, buf, want)
				}
				// The prefix alone (kvbench's and the peers' prefix).
				pb := []byte(strings.Repeat("#", ps+1))
				FormatDigits(pb[:ps], uint64(k/per))
				if string(pb[:ps]) != want[:ps] || pb[ps] != '#' {
					t.Fatalf("prefix of %d (layout %d/%d) = %q, want %q", k, ps, per, pb, want[:ps])
				}
			}
			// Keys sort in k's order across a prefix boundary.
			if per > 1 && maxK > per {
				a := string(FormatSplitKey(make([]byte, KeyLen), per-1, ps, per))
				b := string(FormatSplitKey(make([]byte, KeyLen), per, ps, per))
				if ps > 0 && ps < KeyLen && !(a < b) {
					t.Fatalf("layout %d/%d: key %d %q does not sort before key %d %q", ps, per, per-1, a, per, b)
				}
			}
		}
	}
	// With perPrefix 1 and no prefix digits, FormatSplitKey is FormatKey's
	// 16 digits of 0.
	var b1, b2 [KeyLen]byte
	for _, k := range []int{0, 1, 12345678, MaxKeyIndex} {
		if got, want := FormatSplitKey(b1[:], k, KeyLen, 1), FormatKey(b2[:], k); string(got) != string(want) {
			t.Fatalf("FormatSplitKey(%d, 16, 1) = %q, FormatKey %q", k, got, want)
		}
	}
}

// TestReview11PeersLayoutDistinctKeys: cmd/kvbench/peers lays keys out as
// FormatSplitKey(k, prefixSize, 16) for every --prefix_size its run()
// accepts, [1, 15] (cmd/kvbench/peers/main.go: prefixSize < keyLen and
// num/16 < 10^prefixSize), and promises that "keys sort in k's order"
// and 16 keys share each prefix. Keys must then be distinct and strictly
// increasing in k.
//
// TestReview11PeersLayoutDistinctKeys: every --prefix_size the peers
// accept with 16 keys a prefix (at most 14, leaving two digits for k%16)
// gives distinct keys in k's order. The review found that peers accepted
// 15, where keys 16q+10 ... 16q+15 were written as 16q+0 ... 16q+5; peers
// now refuse it (cmd/kvbench/peers TestPrefixSizeLeavesSuffix).
func TestReview11PeersLayoutDistinctKeys(t *testing.T) {
	const keysPerPrefix = 16 // cmd/kvbench/peers
	for ps := 1; ps <= KeyLen-2; ps++ {
		prev := ""
		for k := 0; k < 64; k++ {
			key := string(FormatSplitKey(make([]byte, KeyLen), k, ps, keysPerPrefix))
			if key <= prev {
				t.Errorf("--prefix_size=%d: key %d = %q does not sort after key %d = %q (a duplicate or out of order)", ps, k, key, k-1, prev)
				break
			}
			prev = key
		}
	}
}
