package db

import (
	"math"

	"github.com/bloomkv/bloomkv/filter"
)

// filterPolicyForLevel returns the policy for tables written to level, or
// nil for no filter.
func (d *DB) filterPolicyForLevel(level int) filter.Policy {
	if b := d.opts.FilterBudgetBitsPerKey; b > 0 {
		bits := d.monkeyBits()
		n := int(math.Round(bits[level]))
		if n <= 0 {
			return nil
		}
		if d.vs.format == FormatLevelDB {
			return filter.NewLevelDBBloomPolicy(n)
		}
		return filter.NewBloomPolicy(n)
	}
	if level < len(d.opts.LevelFilterPolicies) {
		if p := d.opts.LevelFilterPolicies[level]; p != nil {
			if filter.IsNone(p) {
				return nil
			}
			return p
		}
	}
	return d.opts.filterPolicy
}

// monkeyBits returns the Monkey allocation of the filter budget for the
// tree's current shape. A level's weight is its expected share of the
// keys: the larger of its current size and, for levels above the deepest
// one holding data, its target size.
func (d *DB) monkeyBits() [NumLevels]float64 {
	d.mu.Lock()
	v := d.vs.current
	d.mu.Unlock()
	var sizes [NumLevels]float64
	deepest := 0
	for l := 0; l < NumLevels; l++ {
		if v.NumFiles(l) > 0 {
			deepest = l
		}
	}
	sizes[0] = max(float64(v.LevelBytes(0)), float64(d.opts.L0CompactionTrigger)*float64(d.opts.WriteBufferSize)/2)
	for l := 1; l <= max(deepest, 1); l++ {
		s := float64(v.LevelBytes(l))
		if l < deepest {
			s = max(s, float64(d.copts.MaxBytesForLevel(l)))
		}
		sizes[l] = max(s, 1)
	}
	return monkeyAllocation(sizes, d.opts.FilterBudgetBitsPerKey)
}

// monkeyAllocation spreads an average of budget bits per key over levels
// holding sizes[l] keys (any unit) so that the sum of the levels' Bloom
// false-positive rates, p = exp(-bits·ln²2), is smallest: the Lagrange
// condition makes each level's rate proportional to its size. A level
// whose rate would reach 1 gets no filter, and the rest is solved again.
// Levels with size 0 get 0 bits.
func monkeyAllocation(sizes [NumLevels]float64, budget float64) [NumLevels]float64 {
	var bits [NumLevels]float64
	ln2sq := math.Ln2 * math.Ln2
	var total float64
	active := [NumLevels]bool{}
	for l, s := range sizes {
		if s > 0 {
			total += s
			active[l] = true
		}
	}
	if total == 0 {
		return bits
	}
	for {
		// ln c = -(B·N·ln²2 + Σ_A n·ln(n/N)) / N_A, and p_l = c·n_l/N.
		var nA, sum float64
		for l, s := range sizes {
			if active[l] {
				nA += s
				sum += s * math.Log(s/total)
			}
		}
		if nA == 0 {
			return bits
		}
		lnC := -(budget*total*ln2sq + sum) / nA
		worst, worstP := -1, 0.0
		for l, s := range sizes {
			if !active[l] {
				continue
			}
			p := math.Exp(lnC) * s / total
			if p >= 1 && p > worstP {
				worst, worstP = l, p
			}
		}
		if worst < 0 {
			for l, s := range sizes {
				if active[l] {
					bits[l] = -(lnC + math.Log(s/total)) / ln2sq
				}
			}
			return bits
		}
		active[worst] = false
		bits[worst] = 0
	}
}
