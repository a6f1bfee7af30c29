//go:build !race

package db

// raceEnabled is true when the race detector is on.
const raceEnabled = false
