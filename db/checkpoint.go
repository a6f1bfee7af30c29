package db

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// checkpointMarker is the file a checkpoint's directory holds until the
// checkpoint is complete. Open refuses a directory that has it.
const checkpointMarker = "CHECKPOINT-INCOMPLETE"

// checkpointCopyChunk is how much of a table Checkpoint copies between two
// checks for Close.
const checkpointCopyChunk = 1 << 20

// Checkpoint writes a consistent copy of the open store into dir, a
// directory that must not exist yet: dir then opens with Open like any
// store, on its own, while this one goes on.
//
// The copy holds exactly the writes visible at one moment between the
// call's start and its return: every write acknowledged before the call
// started is in it, and no batch is half in it. Tables are hard-linked
// into dir where the file system allows it (Options.FS implements
// vfs.Linker and dir is on the same device) and copied otherwise; what the
// memtables hold at that moment is written to one new table in dir, so the
// copy needs no log and this store flushes nothing. Writers, flushes and
// compactions go on meanwhile; none waits for Checkpoint.
//
// Checkpoint syncs every file and directory entry it makes before it
// returns. A crash (or an error) during Checkpoint leaves this store
// untouched and dir either absent, or holding a file named
// CHECKPOINT-INCOMPLETE, for which Open fails with ErrIncompleteCheckpoint:
// remove dir and take the checkpoint again. An existing dir, even empty,
// is refused with ErrInvalidArgument. Close ends a running Checkpoint with
// ErrClosed.
func (d *DB) Checkpoint(dir string) (err error) {
	cell := d.reads.Inc()
	defer d.reads.DecAt(cell)
	if d.closed.Load() {
		return ErrClosed
	}
	if dir == "" {
		return fmt.Errorf("%w: Checkpoint needs a destination directory; the path is empty", ErrInvalidArgument)
	}
	if filepath.Clean(dir) == filepath.Clean(d.dirname) {
		return fmt.Errorf("%w: the checkpoint's directory %s is the store's own", ErrInvalidArgument, dir)
	}
	switch _, statErr := d.fs.Stat(dir); {
	case statErr == nil:
		return fmt.Errorf("%w: checkpoint destination %s already exists", ErrInvalidArgument, dir)
	case !errors.Is(statErr, fs.ErrNotExist):
		return wrapf(statErr, "checkpoint %s", dir)
	}

	// The read state first, the sequence number second, as Get does: the
	// state's memtables and tables then hold every version visible at seq.
	// The reference keeps the state's tables from deletion until the copy
	// is done.
	ref := d.loadReadState()
	defer ref.unref()
	rs := ref.rs
	seq := d.visibleSeq.Load()
	d.mu.Lock()
	memNum := d.vs.newFileNum() // newer than every table of rs.v
	d.mu.Unlock()

	if err := d.writeCheckpoint(dir, rs, seq, memNum); err != nil {
		if errors.Is(err, ErrClosed) {
			return ErrClosed
		}
		return wrapf(err, "checkpoint %s", dir)
	}
	d.events.info("checkpoint", "dir", dir, "seq", seq, "tables", len(rs.v.AllFileNums()))
	return nil
}

func (d *DB) writeCheckpoint(dir string, rs *readState, seq, memNum uint64) error {
	if err := d.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The marker first, durable before anything else: from here until it
	// is removed, Open refuses dir.
	if err := writeSyncedFile(d.fs, vfs.Join(dir, checkpointMarker),
		[]byte("a checkpoint was being written here and did not finish; remove this directory\n")); err != nil {
		return err
	}
	if err := d.fs.SyncDir(dir); err != nil {
		return err
	}
	if err := d.fs.SyncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
		return err
	}

	// Log number 0: the copy has no log; everything is in its tables.
	edit := rs.v.Snapshot(memNum+2, seq, 0, d.vs.comparer())
	for _, num := range rs.v.AllFileNums() {
		if err := d.checkpointTable(num, dir); err != nil {
			return err
		}
	}
	meta, err := d.checkpointMemtables(rs, seq, dir, memNum)
	if err != nil {
		return err
	}
	if meta != nil {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
	}

	// MANIFEST, then CURRENT (setCurrent syncs dir), then the marker goes.
	manifestNum := memNum + 1
	mf, err := d.fs.Create(manifestFileName(dir, manifestNum))
	if err != nil {
		return err
	}
	rec, err := encodeEdit(edit, d.vs.format)
	if err == nil {
		err = wal.NewWriter(mf).AddRecord(rec)
	}
	if err == nil {
		err = mf.Sync()
	}
	if cerr := mf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.SyncDir(dir)
	}
	if err == nil {
		_, err = setCurrent(d.fs, dir, manifestNum)
	}
	if err == nil {
		err = d.fs.Remove(vfs.Join(dir, checkpointMarker))
	}
	if err == nil {
		err = d.fs.SyncDir(dir)
	}
	return err
}

// checkpointTable puts table num into dir: a hard link where the file
// system has them, a copy otherwise.
func (d *DB) checkpointTable(num uint64, dir string) error {
	src := d.tablePath(num)
	dst := vfs.Join(dir, filepath.Base(src))
	if l, ok := d.fs.(vfs.Linker); ok {
		if err := l.Link(src, dst); err == nil {
			return nil
		}
		// Another device, or links not supported there: copy.
	}
	in, err := d.fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := d.fs.Create(dst)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for copied := 0; ; {
		if copied >= checkpointCopyChunk {
			if d.closed.Load() {
				out.Close()
				return ErrClosed
			}
			copied = 0
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				out.Close()
				return werr
			}
			copied += n
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	err = out.Sync()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkpointMemtables writes the entries of rs's memtables visible at seq
// into table num of dir, and returns its metadata (nil when there are
// none).
func (d *DB) checkpointMemtables(rs *readState, seq uint64, dir string, num uint64) (*manifest.FileMetadata, error) {
	iters := []base.InternalIterator{rs.mem.NewIterator()}
	if rs.imm != nil {
		iters = append(iters, rs.imm.NewIterator())
	}
	it := compaction.NewMergingIterator(iters...)
	defer it.Close()
	var (
		f    vfs.File
		w    *sstable.Writer
		meta *manifest.FileMetadata
		name = tableFileName(dir, num)
	)
	if d.vs.format == FormatLevelDB {
		name = ldbTableFileName(dir, num)
	}
	open := func() error {
		if w != nil {
			return nil
		}
		var err error
		if f, err = d.fs.Create(name); err != nil {
			return err
		}
		w = sstable.NewWriter(f, d.writerOptions(0))
		meta = &manifest.FileMetadata{FileNum: num, SmallestSeq: base.MaxSeqNum}
		return nil
	}
	for _, mem := range []*memtable.MemTable{rs.mem, rs.imm} {
		if mem == nil {
			continue
		}
		for _, t := range mem.RangeDelTombstones() {
			if t.Seq > seq {
				continue // written after the checkpoint's moment
			}
			if err := open(); err != nil {
				return nil, err
			}
			if err := w.AddRangeDel(t.Start, t.End, t.Seq); err != nil {
				f.Close()
				return nil, err
			}
			widenRangeDelBounds(meta, t.Start, t.End, t.Seq)
		}
	}
	for ok := it.First(); ok; ok = it.Next() {
		ikey := it.Key()
		_, s, _, valid := base.ParseInternalKey(ikey)
		if !valid {
			return nil, base.CorruptionErrorf("memtable: bad internal key %q", ikey)
		}
		if s > seq {
			continue // written after the checkpoint's moment
		}
		if err := open(); err != nil {
			return nil, err
		}
		if err := w.Add(ikey, it.Value()); err != nil {
			f.Close()
			return nil, err
		}
		widenBounds(meta, ikey, ikey, s)
	}
	if err := it.Error(); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	if w == nil {
		return nil, nil
	}
	_, err := w.Finish()
	if err == nil {
		err = f.Sync()
	}
	var size int64
	if err == nil {
		size, err = f.Size()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	meta.Size = uint64(size)
	return meta, nil
}

// writeSyncedFile creates name holding data, synced.
func writeSyncedFile(fsys vfs.FS, name string, data []byte) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
