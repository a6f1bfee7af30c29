//go:build race

package wal

// raceEnabled thins the exhaustive offset sweeps under the race detector,
// which makes every byte copied or compared far more expensive.
const raceEnabled = true
