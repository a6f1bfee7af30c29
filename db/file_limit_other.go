//go:build !unix

package db

// defaultMaxOpenFiles is Options.MaxOpenFiles' default where the process's
// limit cannot be read: 1,000.
func defaultMaxOpenFiles() int { return 1000 }
