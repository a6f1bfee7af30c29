// Package vfs is the file-system seam of the engine: every file bloomkv
// reads or writes goes through an FS, so tests can count, fail, or crash
// what the engine does to its files.
//
// Three implementations:
//
//   - Default, the operating system's file system.
//   - MemFS (NewMem), an in-memory one that also records what is durable:
//     each file's synced length, and each directory's entries as of its
//     last SyncDir. CrashClone returns the state a machine crash could
//     leave: synced bytes and synced entries always, a random part of the
//     rest (a prefix of each file's unsynced tail; each unsynced create,
//     rename or remove kept or undone).
//   - FaultFS (NewFaultFS), a wrapper that fails the operations an Injector
//     picks (the Nth write, every sync of a path, ENOSPC from some point on,
//     or at random with a seed). Every injected error matches ErrInjected
//     with errors.Is and unwraps to its cause.
//
// Invariants: a MemFS never loses a synced byte or an entry made durable by
// SyncDir in a CrashClone; a FaultFS performs no part of a failed operation
// except the first half of a Write an injector marked Torn.
package vfs

import (
	"io"
	"os"
	"path/filepath"
)

// File is an open file. Files returned by Create are write-only in practice
// (appends through Write) but must also support ReadAt; files returned by
// Open are read-only.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written bytes durable.
	Sync() error
	// Size returns the current size of the file.
	Size() (int64, error)
}

// FS is the set of file-system operations the engine uses.
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// Remove removes the named file.
	Remove(name string) error
	// Rename atomically renames oldname to newname, replacing newname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if needed.
	// It fails at once, without waiting, when another holder (exclusive or
	// shared, in this process or another) has it, with an error matching
	// ErrLockHeld; any other failure (say, one matching fs.ErrPermission)
	// is returned as it is.
	Lock(name string) (io.Closer, error)
	// LockShared takes a shared lock on the named file, which must exist:
	// it is never created, and it is opened for reading only, so a shared
	// lock works on read-only media and for users who may only read the
	// file. Any number of shared holders, in this process and in others,
	// coexist; it fails at once, without waiting, while an exclusive holder
	// has the file, with an error matching ErrLockHeld. A missing file
	// fails with an error matching fs.ErrNotExist, an unreadable one with
	// one matching fs.ErrPermission.
	LockShared(name string) (io.Closer, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(dir string) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (osFS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Lock(name string) (io.Closer, error)       { return lockFile(name, false) }
func (osFS) LockShared(name string) (io.Closer, error) { return lockFile(name, true) }

// Join joins path elements (filepath.Join; every FS here uses OS-style paths).
func Join(elem ...string) string { return filepath.Join(elem...) }

// Linker is implemented by the file systems that can make hard links:
// Default does. DB.Checkpoint links tables through it when it can and
// copies them when it cannot (or when Link fails, say across devices).
type Linker interface {
	// Link makes newname a hard link to the file oldname.
	Link(oldname, newname string) error
}

// Link implements Linker with os.Link.
func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }
