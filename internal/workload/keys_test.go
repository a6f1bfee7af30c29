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
