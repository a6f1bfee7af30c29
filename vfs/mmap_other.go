//go:build !unix

package vfs

// MapReadOnly implements Mapper; it always fails here.
func (f osFile) MapReadOnly(size int64) (*Mapping, error) {
	return nil, ErrMapUnsupported
}
