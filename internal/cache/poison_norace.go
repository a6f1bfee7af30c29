//go:build !race

package cache

// poisonReleased is off in normal builds: overwriting each released
// buffer costs a pass over its bytes.
const poisonReleased = false
const raceEnabled = false
