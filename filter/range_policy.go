package filter

// RangePolicy builds and reads per-table range filters: a filter over a
// table's keys that answers "may any key of the table lie in [lo, hi)?",
// so a bounded scan can skip a table that holds none of its range without
// reading the table's index or blocks. Like Policy, its filters are
// written into tables under its Name and read back by a policy of the
// same name.
type RangePolicy interface {
	// Name identifies the filter encoding.
	Name() string

	// NewBuilder returns an empty builder for one table's filter.
	NewBuilder() RangeBuilder

	// MayContainRange reports whether a key added to the filter encoded
	// in filter may lie in [lo, hi). It is never false when one does (no
	// false negatives, whatever the keys and ranges). It must not panic or
	// allocate on any input; bytes it cannot interpret give true.
	MayContainRange(filter, lo, hi []byte) bool
}

// RangeBuilder accumulates the keys of one range filter.
type RangeBuilder interface {
	// AddKey adds a user key. Keys come in ascending order, possibly
	// repeated (a table's entries); the builder does not retain key.
	AddKey(key []byte)

	// Finish appends the encoded filter of the keys added since the last
	// Finish to dst, returns the extended slice and resets the builder.
	Finish(dst []byte) []byte
}
