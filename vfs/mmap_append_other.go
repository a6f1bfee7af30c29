//go:build !linux

package vfs

// AppendMapped implements MapAppender; it always fails here.
func (f osFile) AppendMapped() (File, error) { return nil, ErrMapUnsupported }
