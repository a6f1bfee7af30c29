package vfs

import (
	"math/rand"
	"path/filepath"
	"time"
)

// dirOpKind is a kind of change to a directory's entries.
type dirOpKind uint8

const (
	opLink   dirOpKind = iota // name now points to node (create, or the target side of a rename across directories)
	opUnlink                  // name, which pointed to node, is gone
	opRename                  // old moved to name within one directory, replacing what name pointed to
)

// dirOp is one directory change not yet made durable by SyncDir.
type dirOp struct {
	kind dirOpKind
	name string // the entry created, removed, or renamed to
	old  string // opRename: the entry renamed from (same directory as name)
	node *memNode
}

func (op dirOp) dir() string { return filepath.Dir(op.name) }

// apply replays the change on a name → node map.
func (op dirOp) apply(entries map[string]*memNode) {
	switch op.kind {
	case opLink:
		entries[op.name] = op.node
	case opUnlink:
		if entries[op.name] == op.node {
			delete(entries, op.name)
		}
	case opRename:
		if entries[op.old] == op.node {
			delete(entries, op.old)
		}
		entries[op.name] = op.node
	}
}

// maxPendingDirOps bounds the unsynced directory operations a MemFS
// remembers. Older ones count as durable, as if the operating system had
// written its metadata back by itself (real ones do, within seconds); the
// bound keeps long tests on a MemFS that never calls SyncDir from holding
// every removed file's bytes.
const maxPendingDirOps = 4096

// logOp records a directory change; m.mu is held.
func (m *MemFS) logOp(op dirOp) {
	if len(m.pending) >= maxPendingDirOps {
		m.pending[0].apply(m.durable)
		m.pending[0] = dirOp{}
		m.pending = m.pending[1:]
	}
	m.pending = append(m.pending, op)
}

// Survival says what part of the unsynced state survives a simulated
// crash.
type Survival int

const (
	// SurviveRandom keeps a random part. For file data: per crash, each
	// file keeps none, all, or a random prefix of its unsynced tail. For
	// directory operations: per crash a probability p is drawn, and each
	// unsynced operation survives with probability p, independently of the
	// others (so a later one may survive while an earlier one is lost).
	SurviveRandom Survival = iota
	// SurviveNone drops everything unsynced: the strictest crash.
	SurviveNone
	// SurviveAll keeps everything, as if the crash came just after the
	// operating system wrote its caches back.
	SurviveAll
)

// CrashOptions control CrashCloneWith.
type CrashOptions struct {
	// RNG draws the random choices. It is required unless both policies
	// below are SurviveNone or SurviveAll.
	RNG *rand.Rand
	// UnsyncedData is what survives of bytes written to a file after its
	// last Sync.
	UnsyncedData Survival
	// UnsyncedDirOps is what survives of creations, renames and removals
	// made in a directory after its last SyncDir.
	UnsyncedDirOps Survival
}

// CrashClone returns a new MemFS holding what a machine crash at this moment
// could leave on disk: every file's synced bytes and every entry made
// durable by SyncDir are there; of the rest, a random part survives (see
// SurviveRandom). The receiver is unchanged and stays usable; the clone
// shares nothing with it, holds no locks, and all its data counts as synced.
func (m *MemFS) CrashClone(rng *rand.Rand) *MemFS {
	return m.CrashCloneWith(CrashOptions{RNG: rng})
}

// CrashCloneWith is CrashClone with chosen survival policies.
func (m *MemFS) CrashCloneWith(o CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := make(map[string]*memNode, len(m.durable))
	for name, n := range m.durable {
		entries[name] = n
	}
	p := 0.0
	switch o.UnsyncedDirOps {
	case SurviveAll:
		p = 1
	case SurviveRandom:
		p = o.RNG.Float64()
	}
	for _, op := range m.pending {
		if p == 1 || (p > 0 && o.RNG.Float64() < p) {
			op.apply(entries)
		}
	}
	return m.cloneLocked(entries, func(n *memNode) int {
		tail := len(n.data) - n.synced
		if tail <= 0 {
			return len(n.data)
		}
		switch o.UnsyncedData {
		case SurviveAll:
			return len(n.data)
		case SurviveNone:
			return n.synced
		}
		switch o.RNG.Intn(3) {
		case 0:
			return n.synced
		case 1:
			return len(n.data)
		}
		return n.synced + o.RNG.Intn(tail+1)
	})
}

// Clone returns a deep copy of the file system's current state, as a clean
// shutdown would leave it: every file with all its bytes, every entry.
// It holds no locks, and all its data counts as synced.
func (m *MemFS) Clone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cloneLocked(m.files, nil)
}

// cloneLocked builds a MemFS of the given entries, each node keeping
// keep(node) bytes (all when keep is nil). Hard links stay shared.
func (m *MemFS) cloneLocked(entries map[string]*memNode, keep func(*memNode) int) *MemFS {
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	copies := map[*memNode]*memNode{}
	for name, n := range entries {
		if !c.dirs[filepath.Dir(name)] {
			continue
		}
		cn, ok := copies[n]
		if !ok {
			n.mu.RLock()
			size := len(n.data)
			if keep != nil {
				size = keep(n)
			}
			cn = &memNode{data: append([]byte(nil), n.data[:size]...), modTime: time.Now()}
			cn.synced = size
			n.mu.RUnlock()
			copies[n] = cn
		}
		c.files[name] = cn
		c.durable[name] = cn
	}
	return c
}

// UnsyncedState reports what a crash could lose now: the bytes written
// after each file's last Sync (summed), and the directory operations not
// yet made durable by SyncDir.
func (m *MemFS) UnsyncedState() (bytes int64, dirOps int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]bool{}
	for _, n := range m.files {
		if seen[n] {
			continue
		}
		seen[n] = true
		n.mu.RLock()
		bytes += int64(len(n.data) - n.synced)
		n.mu.RUnlock()
	}
	return bytes, len(m.pending)
}
