package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS for tests. It is safe for concurrent use.
//
// Besides the current state of every file, a MemFS tracks what a machine
// crash would leave behind: for each file, how many of its bytes a File.Sync
// made durable, and for each directory, the entries (names and the files
// they point to) as of its last SyncDir, plus the creations, renames and
// removals made since, in order. CrashClone builds the state after a
// simulated crash from that record; Clone copies the current state.
// Directories themselves (MkdirAll, removing an empty directory) are durable
// at once.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
	locks map[string]int // -1: locked exclusively; n > 0: n shared holders

	// durable holds the entries that survive a crash whatever happens to
	// the unsynced directory operations: each directory's entries as of its
	// last SyncDir. pending lists the entry changes made since, oldest first.
	durable map[string]*memNode
	pending []dirOp
}

type memNode struct {
	mu      sync.RWMutex
	data    []byte
	synced  int // data[:synced] survives a crash
	modTime time.Time
}

// NewMem returns an empty in-memory file system whose root "/" exists.
func NewMem() *MemFS {
	return &MemFS{
		files:   map[string]*memNode{},
		dirs:    map[string]bool{"/": true, ".": true},
		locks:   map[string]int{},
		durable: map[string]*memNode{},
	}
}

func clean(name string) string { return filepath.Clean(name) }

func (m *MemFS) parentExists(name string) bool {
	d := filepath.Dir(name)
	return m.dirs[d]
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return nil, &os.PathError{Op: "create", Path: name, Err: syscall_EISDIR}
	}
	if !m.parentExists(name) {
		return nil, &os.PathError{Op: "create", Path: name, Err: fs.ErrNotExist}
	}
	n := &memNode{modTime: time.Now()}
	m.files[name] = n
	m.logOp(dirOp{kind: opLink, name: name, node: n})
	return &memFile{node: n, name: name, write: true}, nil
}

var syscall_EISDIR = errors.New("is a directory")

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{node: n, name: name}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.files[name]; ok {
		delete(m.files, name)
		m.logOp(dirOp{kind: opUnlink, name: name, node: n})
		return nil
	}
	if m.dirs[name] {
		prefix := name + string(filepath.Separator)
		for f := range m.files {
			if strings.HasPrefix(f, prefix) {
				return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return &os.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.parentExists(newname) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	delete(m.files, oldname)
	m.files[newname] = n
	if filepath.Dir(oldname) == filepath.Dir(newname) {
		m.logOp(dirOp{kind: opRename, name: newname, old: oldname, node: n})
	} else {
		m.logOp(dirOp{kind: opUnlink, name: oldname, node: n})
		m.logOp(dirOp{kind: opLink, name: newname, node: n})
	}
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; ; d = filepath.Dir(d) {
		if _, ok := m.files[d]; ok {
			return &os.PathError{Op: "mkdir", Path: d, Err: errors.New("not a directory")}
		}
		m.dirs[d] = true
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	var out []string
	for f := range m.files {
		if filepath.Dir(f) == dir {
			out = append(out, filepath.Base(f))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			out = append(out, filepath.Base(d))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.files[name]; ok {
		n.mu.RLock()
		defer n.mu.RUnlock()
		return memInfo{name: filepath.Base(name), size: int64(len(n.data)), mod: n.modTime}, nil
	}
	if m.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// Lock implements FS.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.locks[name]; n != 0 {
		return nil, fmt.Errorf("lock %s: %w (%s)", name, ErrLockHeld, lockHolders(n))
	}
	if !m.parentExists(name) {
		return nil, &os.PathError{Op: "lock", Path: name, Err: fs.ErrNotExist}
	}
	if _, ok := m.files[name]; !ok {
		n := &memNode{modTime: time.Now()}
		m.files[name] = n
		m.logOp(dirOp{kind: opLink, name: name, node: n})
	}
	m.locks[name] = -1
	return &memLock{m: m, name: name}, nil
}

// LockShared implements FS.
func (m *MemFS) LockShared(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.locks[name]; n < 0 {
		return nil, fmt.Errorf("lock %s: %w (%s)", name, ErrLockHeld, lockHolders(n))
	}
	if _, ok := m.files[name]; !ok {
		return nil, &os.PathError{Op: "lock", Path: name, Err: fs.ErrNotExist}
	}
	m.locks[name]++
	return &memLock{m: m, name: name, shared: true}, nil
}

func lockHolders(n int) string {
	if n < 0 {
		return "exclusively"
	}
	return fmt.Sprintf("shared, by %d holders", n)
}

type memLock struct {
	m      *MemFS
	name   string
	shared bool
	closed bool // guarded by m.mu
}

func (l *memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	l.closed = true
	if l.shared && l.m.locks[l.name] > 1 {
		l.m.locks[l.name]--
	} else {
		delete(l.m.locks, l.name)
	}
	return nil
}

// SyncDir implements FS: the directory's current entries become durable.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return &os.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for name := range m.durable {
		if filepath.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, n := range m.files {
		if filepath.Dir(name) == dir {
			m.durable[name] = n
		}
	}
	kept := m.pending[:0]
	for _, op := range m.pending {
		if op.dir() != dir {
			kept = append(kept, op)
		}
	}
	clear(m.pending[len(kept):])
	m.pending = kept
	return nil
}

type memFile struct {
	node   *memNode
	name   string
	off    int64
	write  bool
	closed bool
}

var errClosed = errors.New("vfs: file already closed")

func (f *memFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	if off < 0 {
		return 0, errors.New("vfs: negative offset")
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	if !f.write {
		return 0, errors.New("vfs: file not open for writing")
	}
	f.node.mu.Lock()
	f.node.data = append(f.node.data, p...)
	f.node.modTime = time.Now()
	f.node.mu.Unlock()
	return len(p), nil
}

func (f *memFile) Close() error {
	if f.closed {
		return errClosed
	}
	f.closed = true
	return nil
}

func (f *memFile) Sync() error {
	if f.closed {
		return errClosed
	}
	f.node.mu.Lock()
	f.node.synced = len(f.node.data)
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.data)), nil
}

type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
