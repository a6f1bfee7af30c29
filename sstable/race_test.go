//go:build race

package sstable

// raceEnabled skips allocation counts under the race detector, whose
// sync.Pool drops pooled values at random.
const raceEnabled = true
