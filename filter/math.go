package filter

import (
	"fmt"
	"math"
)

// EstimateFPR returns the theoretical false-positive rate of a standard Bloom
// filter with bitsPerKey bits per key and k probes, (1 - e^(-k/bitsPerKey))^k.
// It returns 1 when bitsPerKey is not positive or k < 1 (no useful filter).
//
// At 10 bits per key: k=6 gives 0.84%, k=7 gives 0.82%.
func EstimateFPR(bitsPerKey float64, k int) float64 {
	if !(bitsPerKey > 0) || k < 1 {
		return 1
	}
	return math.Pow(-math.Expm1(-float64(k)/bitsPerKey), float64(k))
}

// OptimalK returns the whole number of probes in [1, MaxProbes] that
// minimises EstimateFPR(bitsPerKey, k): the better of the two integers around
// bitsPerKey*ln 2. It returns 1 when bitsPerKey is not positive.
//
// The Bloom policies do not use it: they follow the card's formula
// k = floor(0.69*bitsPerKey), which can be one lower (6 instead of 7 at 10
// bits per key, costing 0.02 points of false-positive rate but one probe less
// per lookup).
func OptimalK(bitsPerKey float64) int {
	if !(bitsPerKey > 0) {
		return 1
	}
	kf := bitsPerKey * math.Ln2
	if kf >= MaxProbes {
		return MaxProbes
	}
	lo := clampProbes(int(kf))
	hi := clampProbes(lo + 1)
	if EstimateFPR(bitsPerKey, hi) < EstimateFPR(bitsPerKey, lo) {
		return hi
	}
	return lo
}

// OptimalBits returns the number of bits a standard Bloom filter needs to
// hold n keys at false-positive rate p, by Guava's formula
// floor(-n·ln p / (ln 2)²): 9,585,058 bits for n = 1,000,000 and p = 0.01.
//
// p is clamped to [MinFPP, MaxFPP] and n = 0 counts as 1 (see CheckSizing);
// the result saturates at math.MaxUint64 rather than overflow.
func OptimalBits(n uint64, p float64) uint64 {
	n = max(n, 1)
	p = clampFPP(p)
	m := -float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)
	if m >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(m)
}

// BitsPerKeyForFPR is the best-practice lookup for a standard Bloom filter:
// it returns the smallest whole number of bits per key whose best probe
// count gives a theoretical false-positive rate (EstimateFPR) of at most
// maxFPR, together with that probe count. For 1% it returns 10 bits and
// k = 7 (0.82%); for 0.1%, 15 bits and k = 10.
//
// A maxFPR of EstimateFPR(1, 1) ≈ 63% or more gives (1, 1); a maxFPR that
// is not positive (or NaN) gives (MaxBitsPerKey, MaxProbes), the most
// accurate filter a policy builds. NewBloomPolicy(bitsPerKey) then uses
// floor(0.69·bitsPerKey) probes, which can be one fewer than k and a little
// less accurate (0.84% instead of 0.82% at 10 bits per key).
func BitsPerKeyForFPR(maxFPR float64) (bitsPerKey, k int) {
	if !(maxFPR > 0) {
		return MaxBitsPerKey, MaxProbes
	}
	// The rate falls as bits grow (with the best k), so bisect.
	lo, hi := MinBitsPerKey, MaxBitsPerKey
	if EstimateFPR(float64(hi), OptimalK(float64(hi))) > maxFPR {
		return MaxBitsPerKey, MaxProbes
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if EstimateFPR(float64(mid), OptimalK(float64(mid))) <= maxFPR {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, OptimalK(float64(lo))
}

// EstimateBlockedFPR returns the theoretical false-positive rate of a
// cache-line-blocked Bloom filter (NewBlockedBloomPolicy) with bitsPerKey
// bits per key and k probes per key, all in one 512-bit line.
//
// Keys fall into lines unevenly: the number in one line is close to
// Poisson-distributed with mean λ = 512/bitsPerKey, and a line holding j
// keys has a share 1-(1-1/512)^(j·k) of its bits set. The rate is the
// average over lines of that share to the k-th power. Overloaded lines
// weigh more than underloaded ones save, so a blocked filter is always a
// little worse than a standard one with the same bits (0.95% against 0.82%
// at 10 bits per key) and its best k is lower. It returns 1 when bitsPerKey
// is not positive or k < 1.
func EstimateBlockedFPR(bitsPerKey float64, k int) float64 {
	if !(bitsPerKey > 0) || k < 1 {
		return 1
	}
	lambda := blockBits / bitsPerKey
	// Sum the Poisson terms around the mean, far enough out that the rest
	// is below float64 precision for any rate we care about.
	hi := int(lambda + 12*math.Sqrt(lambda) + 30)
	lnKeep := math.Log1p(-1.0 / blockBits) // ln(1 - 1/512)
	var sum float64
	for j := 0; j <= hi; j++ {
		lg, _ := math.Lgamma(float64(j) + 1)
		pj := math.Exp(float64(j)*math.Log(lambda) - lambda - lg)
		set := -math.Expm1(float64(j*k) * lnKeep)
		sum += pj * math.Pow(set, float64(k))
	}
	return min(sum, 1)
}

// blockedOptimalK returns the probe count in [1, MaxProbes] that minimises
// EstimateBlockedFPR(bitsPerKey, k).
func blockedOptimalK(bitsPerKey int) int {
	best, bestFPR := 1, 2.0
	for k := 1; k <= MaxProbes; k++ {
		if fpr := EstimateBlockedFPR(float64(bitsPerKey), k); fpr < bestFPR {
			best, bestFPR = k, fpr
		}
	}
	return best
}

const (
	// MinFPP is the smallest false-positive probability the standalone
	// filters are sized for; a smaller (zero, negative or NaN) fpp is raised
	// to it.
	MinFPP = 1e-12

	// MaxFPP is the largest false-positive probability the standalone
	// filters are sized for; a larger fpp (1 or more) is lowered to it.
	MaxFPP = 0.5
)

// clampFPP limits a false-positive probability to [MinFPP, MaxFPP]; NaN
// becomes MaxFPP.
func clampFPP(p float64) float64 {
	if p != p || p > MaxFPP {
		return MaxFPP
	}
	return max(p, MinFPP)
}

// CheckSizing reports whether expectedInsertions and fpp are in range for
// the standalone filters (NewBloomFilter, NewCountingBloomFilter,
// NewScalableBloomFilter): expectedInsertions > 0 and MinFPP <= fpp <=
// MaxFPP. The
// constructors never fail or panic; they clamp (see their docs). Call
// CheckSizing first to refuse bad user input instead.
func CheckSizing(expectedInsertions uint64, fpp float64) error {
	if expectedInsertions == 0 {
		return fmt.Errorf("%w: expected insertions must be positive", ErrInvalidArgument)
	}
	if !(fpp >= MinFPP && fpp <= MaxFPP) {
		return fmt.Errorf("%w: false-positive probability %v is outside [%v, %v]", ErrInvalidArgument, fpp, MinFPP, MaxFPP)
	}
	return nil
}
