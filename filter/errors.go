package filter

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidArgument is wrapped by the errors of CheckSizing and of the
	// other argument checks of this package.
	ErrInvalidArgument = errors.New("filter: invalid argument")

	// ErrInvalidEncoding is wrapped by every error an UnmarshalBinary method
	// returns for bytes it cannot decode: a wrong tag or version, a length
	// that does not match, a parameter out of range.
	ErrInvalidEncoding = errors.New("filter: invalid encoding")

	// ErrIncompatible is returned when two filters cannot be combined (such
	// as BloomFilter.Union of filters with different sizes or probe counts).
	ErrIncompatible = errors.New("filter: incompatible filters")

	// ErrFull is wrapped by the errors of the Insert methods for a filter
	// that can take no more keys: ScalableBloomFilter.Insert on a
	// non-scaling filter at its capacity (or a scaling one whose last
	// possible stage is full), and CuckooFilter.Insert once a key is in the
	// victim slot.
	ErrFull = errors.New("filter: filter is full")

	// ErrTooManyCopies is wrapped by the error of CuckooFilter.Insert for a
	// key whose two buckets hold its fingerprint in every slot (see
	// CuckooFilter).
	ErrTooManyCopies = errors.New("filter: too many copies of the key")
)

// errorf returns an error wrapping kind with a message.
func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}
