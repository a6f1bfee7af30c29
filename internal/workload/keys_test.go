package workload

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestFormatKey(t *testing.T) {
	var buf [KeyLen]byte
	ks := []int{0, 1, 9, 10, 99, 100, 12345, 999999, 1_000_000, 99_999_999, 100_000_000, 123456789012345, MaxKeyIndex}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ks = append(ks, rng.IntN(MaxKeyIndex+1))
	}
	for _, k := range ks {
		if got, want := string(FormatKey(buf[:], k)), fmt.Sprintf("%016d", k); got != want {
			t.Fatalf("FormatKey(%d) = %q, want %q", k, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { FormatKey(buf[:], 42) }); n != 0 {
		t.Errorf("FormatKey allocates %.0f times", n)
	}
}

func TestFormatSplitKey(t *testing.T) {
	var buf [KeyLen]byte
	rng := rand.New(rand.NewPCG(3, 4))
	for _, layout := range []struct{ prefix, per int }{{8, 16}, {8, 1}, {4, 1000}, {1, 3}, {15, 10}, {12, 9999}, {0, 1}, {16, 1}} {
		maxK := 1
		for range layout.prefix {
			maxK *= 10
		}
		maxK = min(maxK*layout.per, MaxKeyIndex+1)
		ks := []int{0, 1, layout.per - 1, layout.per, maxK - 1}
		for range 2000 {
			ks = append(ks, rng.IntN(maxK))
		}
		for _, k := range ks {
			want := fmt.Sprintf("%0*d%0*d", layout.prefix, k/layout.per, KeyLen-layout.prefix, k%layout.per)
			if layout.prefix == 0 {
				want = fmt.Sprintf("%016d", k%layout.per)
			}
			if layout.prefix == KeyLen {
				want = fmt.Sprintf("%016d", k/layout.per)
			}
			if got := string(FormatSplitKey(buf[:], k, layout.prefix, layout.per)); got != want {
				t.Fatalf("FormatSplitKey(%d, %d, %d) = %q, want %q", k, layout.prefix, layout.per, got, want)
			}
			var p [KeyLen]byte
			FormatDigits(p[:layout.prefix], uint64(k/layout.per))
			if got := string(p[:layout.prefix]); got != want[:layout.prefix] {
				t.Fatalf("FormatDigits(%d digits, %d) = %q, want %q", layout.prefix, k/layout.per, got, want[:layout.prefix])
			}
		}
	}
	// More digits than room: the last ones, as %0Nd's last N bytes.
	var p [3]byte
	FormatDigits(p[:], 123456)
	if string(p[:]) != "456" {
		t.Errorf("FormatDigits(3 digits, 123456) = %q, want \"456\"", p[:])
	}
	if n := testing.AllocsPerRun(100, func() { FormatSplitKey(buf[:], 4242, 8, 16) }); n != 0 {
		t.Errorf("FormatSplitKey allocates %.0f times", n)
	}
}
