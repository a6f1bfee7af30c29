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

// FormatDigits writes v into dst as len(dst) decimal digits, zero padded
// (the last len(dst) digits of v when it has more), two digits a
// division. A prefix of a split key (FormatSplitKey) written a digit a
// division was a chain of eight dependent divisions.
func FormatDigits(dst []byte, v uint64) {
	i := len(dst)
	for ; i >= 2; i -= 2 {
		d := v % 100
		v /= 100
		dst[i-2], dst[i-1] = digitPairs[2*d], digitPairs[2*d+1]
	}
	if i == 1 {
		dst[0] = '0' + byte(v%10)
	}
}

// FormatSplitKey writes key number k of a split layout into dst[:16] and
// returns dst[:16]: prefixSize decimal digits of k/perPrefix followed by
// 16-prefixSize digits of k%perPrefix, so that perPrefix consecutive keys
// share each prefix and keys sort in k's order (kvbench's --prefix_size
// and --keys_per_prefix). prefixSize must be in [0, 16] and perPrefix
// positive; k/perPrefix needs at most prefixSize digits and k%perPrefix at
// most 16-prefixSize.
func FormatSplitKey(dst []byte, k, prefixSize, perPrefix int) []byte {
	dst = dst[:KeyLen]
	FormatDigits(dst[:prefixSize], uint64(k/perPrefix))
	FormatDigits(dst[prefixSize:], uint64(k%perPrefix))
	return dst
}
