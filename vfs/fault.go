package vfs

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Op is a kind of file-system operation as FaultFS sees it. Ops are bit
// flags, so a set of kinds is their OR.
type Op uint32

// The operation kinds. File.Close is never failed and not counted.
const (
	OpCreate  Op = 1 << iota // FS.Create
	OpOpen                   // FS.Open
	OpRead                   // File.Read, File.ReadAt
	OpWrite                  // File.Write
	OpSync                   // File.Sync
	OpRemove                 // FS.Remove
	OpRename                 // FS.Rename
	OpMkdir                  // FS.MkdirAll
	OpList                   // FS.List
	OpStat                   // FS.Stat, File.Size
	OpLock                   // FS.Lock
	OpSyncDir                // FS.SyncDir
	// OpLockShared is FS.LockShared. It is not in OpMutating: a shared
	// lock never creates its file.
	OpLockShared

	numOps = iota
)

// Sets of operation kinds.
const (
	// OpAll is every kind.
	OpAll Op = 1<<numOps - 1
	// OpMutating is every kind that changes what is on disk.
	OpMutating = OpCreate | OpWrite | OpSync | OpRemove | OpRename | OpMkdir | OpLock | OpSyncDir
)

var opNames = [numOps]string{"create", "open", "read", "write", "sync", "remove", "rename", "mkdir", "list", "stat", "lock", "syncdir", "lockshared"}

// String names the kind, or the kinds of a set joined by "|".
func (o Op) String() string {
	var parts []string
	for i := range numOps {
		if o&(1<<i) != 0 {
			parts = append(parts, opNames[i])
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("Op(%#x)", uint32(o))
	}
	return strings.Join(parts, "|")
}

// ErrInjected is matched (errors.Is) by every error FaultFS injects.
var ErrInjected = errors.New("vfs: injected error")

// ErrIO is the cause FaultFS uses when an injector gives none of its own.
var ErrIO = errors.New("injected I/O error")

// InjectedError is the error FaultFS returns from a failed operation. It
// matches ErrInjected and unwraps to its cause, so both
// errors.Is(err, vfs.ErrInjected) and, say, errors.Is(err, syscall.ENOSPC)
// hold.
type InjectedError struct {
	// Op and Path say which operation failed (Path is the file's name for
	// operations on an open file; for Rename it is the old name).
	Op   Op
	Path string
	// Err is the cause; nil means ErrIO.
	Err error
	// Torn, for a failed Write, makes the file keep the first half of the
	// bytes the write was given before the error, like a write that runs
	// out of space part-way.
	Torn bool
}

// Error describes the injected failure: the operation, the path and the cause.
func (e *InjectedError) Error() string {
	return fmt.Sprintf("%v: %s %s: %v", ErrInjected, e.Op, e.Path, e.Unwrap())
}

// Is reports whether target is ErrInjected.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }

// Unwrap returns the cause.
func (e *InjectedError) Unwrap() error {
	if e.Err == nil {
		return ErrIO
	}
	return e.Err
}

// Injector decides which operations fail. It must be safe for concurrent
// use.
type Injector interface {
	// MaybeInject is called before every operation FaultFS passes on. A
	// non-nil result fails the operation without performing it (except
	// the first half of a torn Write): an *InjectedError is returned as is
	// (its Op and Path filled in when empty), any other error becomes the
	// cause of one.
	MaybeInject(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeInject calls f.
func (f InjectorFunc) MaybeInject(op Op, path string) error { return f(op, path) }

// FaultFS wraps an FS and fails the operations its Injector picks. It
// counts every operation it sees, by kind, so a test can run a workload
// once without faults to learn how many operations it makes and then fail
// each one in turn. It is safe for concurrent use.
type FaultFS struct {
	fs     FS
	inj    atomic.Pointer[Injector]
	counts [numOps]atomic.Int64
}

// NewFaultFS returns fs wrapped to fail what inj picks. inj may be nil (no
// faults until SetInjector).
func NewFaultFS(fs FS, inj Injector) *FaultFS {
	f := &FaultFS{fs: fs}
	f.SetInjector(inj)
	return f
}

// SetInjector replaces the injector; nil stops all faults.
func (f *FaultFS) SetInjector(inj Injector) {
	if inj == nil {
		f.inj.Store(nil)
		return
	}
	f.inj.Store(&inj)
}

// Unwrap returns the wrapped FS: the same files, without faults.
func (f *FaultFS) Unwrap() FS { return f.fs }

// Count returns how many operations of the given kinds FaultFS has seen,
// failed ones included.
func (f *FaultFS) Count(ops Op) int64 {
	var n int64
	for i := range numOps {
		if ops&(1<<i) != 0 {
			n += f.counts[i].Load()
		}
	}
	return n
}

// check counts op and asks the injector about it.
func (f *FaultFS) check(op Op, path string) error {
	f.counts[bits.TrailingZeros32(uint32(op))].Add(1)
	p := f.inj.Load()
	if p == nil {
		return nil
	}
	err := (*p).MaybeInject(op, path)
	if err == nil {
		return nil
	}
	var ie *InjectedError
	if errors.As(err, &ie) {
		if ie.Op == 0 {
			ie.Op = op
		}
		if ie.Path == "" {
			ie.Path = path
		}
		return ie
	}
	return &InjectedError{Op: op, Path: path, Err: err}
}

// Create implements FS.
func (f *FaultFS) Create(name string) (File, error) {
	if err := f.check(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

// Open implements FS.
func (f *FaultFS) Open(name string) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

// Rename implements FS.
func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, oldname); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.check(OpMkdir, dir); err != nil {
		return err
	}
	return f.fs.MkdirAll(dir, perm)
}

// List implements FS.
func (f *FaultFS) List(dir string) ([]string, error) {
	if err := f.check(OpList, dir); err != nil {
		return nil, err
	}
	return f.fs.List(dir)
}

// Stat implements FS.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

// Lock implements FS.
func (f *FaultFS) Lock(name string) (io.Closer, error) {
	if err := f.check(OpLock, name); err != nil {
		return nil, err
	}
	return f.fs.Lock(name)
}

// LockShared implements FS.
func (f *FaultFS) LockShared(name string) (io.Closer, error) {
	if err := f.check(OpLockShared, name); err != nil {
		return nil, err
	}
	return f.fs.LockShared(name)
}

// SyncDir implements FS.
func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return err
	}
	return f.fs.SyncDir(dir)
}

type faultFile struct {
	File
	fs   *FaultFS
	name string
}

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		var ie *InjectedError
		if errors.As(err, &ie) && ie.Torn {
			n, werr := f.File.Write(p[:len(p)/2])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Size() (int64, error) {
	if err := f.fs.check(OpStat, f.name); err != nil {
		return 0, err
	}
	return f.File.Size()
}

// Fault describes which operations to fail. Build an Injector from it with
// Injector. The zero Fault fails the first operation of any kind.
type Fault struct {
	// Ops are the kinds of operation the fault applies to; 0 means all.
	Ops Op
	// PathContains, when set, limits the fault to paths containing it.
	PathContains string
	// After is how many matching operations succeed before the first
	// failure: After 0 fails the first matching operation, After n the
	// (n+1)th.
	After int64
	// Count is how many operations fail once the fault has started: 0
	// means one, a negative value every later matching operation (a full
	// disk, a dead device).
	Count int64
	// Probability, when in (0, 1), makes each matching operation from the
	// (After+1)th on fail only with this probability, drawn from a source
	// seeded with Seed; Count still caps the failures. 0 means always.
	Probability float64
	// Seed seeds the random draws of Probability.
	Seed int64
	// Err is the cause of the failures (syscall.ENOSPC for a full disk);
	// nil means ErrIO.
	Err error
	// Torn makes failed writes keep the first half of their bytes.
	Torn bool
}

// Injector returns a new injector carrying out f, with its own counters.
func (f Fault) Injector() *FaultInjector {
	fi := &FaultInjector{f: f}
	if f.Probability > 0 && f.Probability < 1 {
		fi.rng = rand.New(rand.NewSource(f.Seed))
	}
	return fi
}

// FaultInjector is the Injector a Fault builds. It records what it did.
type FaultInjector struct {
	f Fault

	mu       sync.Mutex
	rng      *rand.Rand
	matched  int64
	injected []InjectedError
	disabled bool
}

// MaybeInject implements Injector.
func (fi *FaultInjector) MaybeInject(op Op, path string) error {
	if fi.f.Ops != 0 && fi.f.Ops&op == 0 {
		return nil
	}
	if fi.f.PathContains != "" && !strings.Contains(path, fi.f.PathContains) {
		return nil
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	n := fi.matched
	fi.matched++
	if fi.disabled || n < fi.f.After {
		return nil
	}
	if limit := max(fi.f.Count, 1); fi.f.Count >= 0 && int64(len(fi.injected)) >= limit {
		return nil
	}
	if fi.rng != nil && fi.rng.Float64() >= fi.f.Probability {
		return nil
	}
	e := InjectedError{Op: op, Path: path, Err: fi.f.Err, Torn: fi.f.Torn}
	fi.injected = append(fi.injected, e)
	return &e
}

// Matched returns how many operations matched the fault's kinds and path.
func (fi *FaultInjector) Matched() int64 {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.matched
}

// Injected returns the failures injected so far, oldest first.
func (fi *FaultInjector) Injected() []InjectedError {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return append([]InjectedError(nil), fi.injected...)
}

// Disable stops the injector from failing anything more (a full disk that
// got space back); it keeps counting.
func (fi *FaultInjector) Disable() {
	fi.mu.Lock()
	fi.disabled = true
	fi.mu.Unlock()
}
