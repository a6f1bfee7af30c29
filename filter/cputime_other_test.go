//go:build !linux

package filter

import "testing"

// cpuClock is a no-op where the thread CPU time is not available.
type cpuClock struct{}

func startCPU(b *testing.B) *cpuClock { b.ResetTimer(); return &cpuClock{} }
func (*cpuClock) stop(*testing.B)     {}
