package workload

// KeyLen is the length of every key the benchmarks write: db_bench's
// %016d.
const KeyLen = 16

// MaxKeyIndex is the largest key number FormatKey can write.
const MaxKeyIndex = 9_999_999_999_999_999

// digitPairs holds "00" to "99": FormatKey writes two digits a division.
const digitPairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// FormatKey writes key number k as 16 decimal digits, zero padded (the
// same bytes as fmt.Sprintf("%016d", k)), into dst[:16] and returns
// dst[:16]. It allocates nothing, unlike fmt. k must be in [0,
// MaxKeyIndex].
//
// Two independent halves of eight digits, two digits a step: a digit a
// division made one chain of 16 dependent divisions, about 40 ns a key,
// a fifth of what kvbench's multimissing measured; the harness's cost is
// every benchmark's and every engine's, and hides the engine's.
func FormatKey(dst []byte, k int) []byte {
	dst = dst[:KeyLen]
	hi, lo := uint64(k)/1e8, uint64(k)%1e8
	for i := KeyLen - 2; i >= KeyLen/2; i -= 2 {
		h, l := hi%100, lo%100
		hi, lo = hi/100, lo/100
		dst[i-8], dst[i-7] = digitPairs[2*h], digitPairs[2*h+1]
		dst[i], dst[i+1] = digitPairs[2*l], digitPairs[2*l+1]
	}
	return dst
}
