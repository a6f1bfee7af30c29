package base

import "fmt"

// HumanBytes renders a size with a binary unit: "512B", "1.5KiB", "3.0MiB",
// "2.1GiB". The db's Metrics table and kvtool print sizes with it.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
