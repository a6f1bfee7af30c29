package base

// InternalIterator walks entries in internal-key order (CompareInternal).
// Every positioning method returns whether the iterator is now at an entry
// (the same as Valid afterwards). Key and Value are valid until the next
// positioning call and must not be modified by the caller. When a
// positioning method returns false because of an I/O or corruption error,
// Error reports it.
type InternalIterator interface {
	// First moves to the first entry.
	First() bool
	// Last moves to the last entry.
	Last() bool
	// SeekGE moves to the first entry whose internal key is >= ikey.
	SeekGE(ikey []byte) bool
	// SeekLT moves to the last entry whose internal key is < ikey.
	SeekLT(ikey []byte) bool
	// Next moves forward one entry. It must only be called when Valid.
	Next() bool
	// Prev moves backward one entry. It must only be called when Valid.
	Prev() bool
	// Valid reports whether the iterator is at an entry.
	Valid() bool
	// Key returns the internal key of the current entry.
	Key() []byte
	// Value returns the value of the current entry.
	Value() []byte
	// Error returns the first error the iterator met, if any.
	Error() error
	// Close releases the iterator's resources and returns Error().
	Close() error
}
