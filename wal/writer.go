package wal

import (
	"encoding/binary"
	"io"
	"slices"
)

// maxRetainedBuf is the largest assembly buffer a Writer keeps between
// records; a larger one (from an unusually big record) is dropped after use.
const maxRetainedBuf = 4 << 20

// Writer appends logical records to a log. It is not safe for concurrent
// use; the caller (the commit pipeline) serializes AddRecord and Sync.
type Writer struct {
	w        io.Writer
	blockOff int    // offset of the next byte within the current block
	size     int64  // bytes accepted by w
	buf      []byte // reused to assemble one record's bytes
	err      error  // sticky: first error from w
}

// NewWriter returns a Writer appending to w, which must be positioned at
// offset 0 of a new, empty file.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// AddRecord appends rec as one logical record, split into fragments at
// block boundaries. All of the record's bytes reach the underlying writer
// in a single Write call. It returns the first error of the underlying
// writer; once an error has happened every later call returns it.
func (w *Writer) AddRecord(rec []byte) error {
	if w.err != nil {
		return w.err
	}
	// Worst case: padding before the first fragment plus one header per
	// (started) block.
	need := len(rec) + headerSize*(len(rec)/maxFragment+2) + headerSize
	buf := slices.Grow(w.buf[:0], need)
	off := w.blockOff
	first := true
	for {
		if left := BlockSize - off; left < headerSize {
			buf = append(buf, make([]byte, left)...) // zero padding
			off = 0
		}
		n := min(len(rec), BlockSize-off-headerSize)
		last := n == len(rec)
		var typ byte
		switch {
		case first && last:
			typ = typeFull
		case first:
			typ = typeFirst
		case last:
			typ = typeLast
		default:
			typ = typeMiddle
		}
		h := len(buf)
		buf = append(buf, 0, 0, 0, 0, 0, 0, typ)
		binary.LittleEndian.PutUint16(buf[h+4:], uint16(n))
		buf = append(buf, rec[:n]...)
		binary.LittleEndian.PutUint32(buf[h:], fragmentChecksum(buf[h+6:]))
		off += headerSize + n
		rec = rec[n:]
		first = false
		if last {
			break
		}
	}
	w.blockOff = off
	n, err := w.w.Write(buf)
	w.size += int64(n)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if cap(buf) <= maxRetainedBuf {
		w.buf = buf[:0]
	} else {
		w.buf = nil
	}
	if err != nil {
		w.err = err
	}
	return err
}

// Sync makes the written records durable by calling Sync on the underlying
// writer when it has a `Sync() error` method; otherwise it does nothing.
// A failed Sync is sticky like a failed write: the durability of what was
// written is then unknown, so the Writer refuses further records.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	s, ok := w.w.(interface{ Sync() error })
	if !ok {
		return nil
	}
	if err := s.Sync(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Size returns the number of bytes written to the underlying writer so far,
// which is the length of the log file.
func (w *Writer) Size() int64 { return w.size }
