// Package compaction owns what merges sorted runs: the merging iterator
// that the read path and compactions share, and (with the compaction
// issue) picking inputs and writing merged outputs.
package compaction
