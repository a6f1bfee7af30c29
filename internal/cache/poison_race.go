//go:build race

package cache

// With the race detector on, released buffers are overwritten so that a
// read of a block after its last Release is reported as a data race.
const poisonReleased = true
const raceEnabled = true
