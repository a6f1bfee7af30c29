package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
)

// maxRetainedScratch is the largest assembly buffer a Reader keeps once a
// record assembled in it has been handed out.
const maxRetainedScratch = 4 << 20

// Reader reads logical records from a log written by Writer (or LevelDB).
// It is not safe for concurrent use.
type Reader struct {
	r io.Reader

	block    []byte // the current block; len BlockSize once allocated
	pos, end int    // unread part of block is block[pos:end]
	blockOff int64  // file offset of block[0]
	last     bool   // block is the last one of the file (short or empty read)

	scratch  []byte // fragments of the record being assembled
	inRecord bool   // a FIRST fragment has been seen and no LAST yet
	physical int64  // bytes (headers included) of the fragments in scratch

	dropped int64
	err     error // sticky: io.EOF or an I/O error from r
}

// NewReader returns a Reader of the log whose bytes r yields from offset 0.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r}
}

// DroppedBytes returns how many bytes of the log have been skipped so far
// because they were corrupt or belonged to a torn tail. Zero padding and a
// zero-filled tail are not counted.
func (r *Reader) DroppedBytes() int64 { return r.dropped }

// Next returns the next logical record. The slice is valid until the next
// call to Next and must not be modified.
//
// At the end of the log it returns io.EOF; a torn or zero-filled tail is
// the end of the log too. When it meets a record that is not valid it
// returns an error wrapping base.ErrCorruption, having skipped past the
// damage, and the following call continues with the next good record. Any
// other error comes from the underlying reader and is returned from then on.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		if r.end-r.pos < headerSize {
			if !r.last {
				// Skip the block's zero padding (if any) and move on.
				if err := r.readBlock(); err != nil {
					return nil, err
				}
				continue
			}
			// A header cut short by the end of the file, or zero padding
			// after the last record.
			if !allZero(r.block[r.pos:r.end]) {
				r.dropped += int64(r.end - r.pos)
			}
			r.pos = r.end
			return r.endOfLog()
		}

		h := r.block[r.pos:r.end]
		length := int(binary.LittleEndian.Uint16(h[4:6]))
		typ := h[6]
		if typ == typeZero && length == 0 {
			return r.zeroHeader()
		}
		recEnd := r.pos + headerSize + length
		if recEnd > r.end {
			if r.last && recEnd <= BlockSize && r.fragmentWithin(binary.LittleEndian.Uint32(h[0:4])) {
				return nil, r.dropBlock("fragment length %d runs past the end of the log, but a shorter fragment checksums", length)
			}
			if r.last && recEnd <= BlockSize {
				// The payload was cut short by the end of the file.
				r.dropped += int64(r.end - r.pos)
				r.pos = r.end
				return r.endOfLog()
			}
			return nil, r.dropBlock("fragment length %d runs past its block", length)
		}
		if binary.LittleEndian.Uint32(h[0:4]) != fragmentChecksum(r.block[r.pos+6:recEnd]) {
			return nil, r.dropBlock("checksum mismatch")
		}
		payload := r.block[r.pos+headerSize : recEnd : recEnd]
		fragOff := r.blockOff + int64(r.pos)
		switch typ {
		case typeFull, typeFirst:
			if r.inRecord {
				// Leave this fragment unread: it starts a new record, which
				// the next call returns or assembles.
				return nil, r.dropPending(fragOff, "record without its last fragment")
			}
			r.pos = recEnd
			if typ == typeFull {
				return payload, nil
			}
			if cap(r.scratch) > maxRetainedScratch {
				r.scratch = nil
			}
			r.scratch = append(r.scratch[:0], payload...)
			r.inRecord = true
			r.physical = int64(headerSize + length)
		case typeMiddle, typeLast:
			r.pos = recEnd
			if !r.inRecord {
				r.dropped += int64(headerSize + length)
				return nil, base.CorruptionErrorf("wal: fragment type %d without a first fragment at offset %d", typ, fragOff)
			}
			if n := len(r.scratch) + len(payload); n > cap(r.scratch) {
				// Double: append grows large slices by only 1.25x, which
				// copies a record of hundreds of MiB many times over.
				r.scratch = append(make([]byte, 0, max(n, 2*cap(r.scratch))), r.scratch...)
			}
			r.scratch = append(r.scratch, payload...)
			r.physical += int64(headerSize + length)
			if typ == typeLast {
				r.inRecord = false
				r.physical = 0
				return r.scratch[:len(r.scratch):len(r.scratch)], nil
			}
		default:
			r.pos = recEnd
			r.dropped += int64(headerSize+length) + r.physical
			r.resetRecord()
			return nil, base.CorruptionErrorf("wal: unknown fragment type %d at offset %d", typ, fragOff)
		}
	}
}

// readBlock reads the next block into r.block. A short read marks it as the
// last block of the file.
func (r *Reader) readBlock() error {
	if r.block == nil {
		r.block = make([]byte, BlockSize)
	}
	r.blockOff += int64(r.end)
	n, err := io.ReadFull(r.r, r.block)
	r.pos, r.end = 0, n
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		r.last = true
	default:
		r.pos = r.end
		r.err = err
		return err
	}
	return nil
}

// zeroHeader handles a header of type 0 and length 0 at r.pos: the start of
// space that was allocated but never written. If only zeros follow to the
// end of the file this is the end of the log; zeros followed by data are
// corruption.
func (r *Reader) zeroHeader() ([]byte, error) {
	if !allZero(r.block[r.pos:r.end]) {
		return nil, r.dropBlock("zero fragment header followed by data")
	}
	start := r.blockOff + int64(r.pos)
	zeros := int64(r.end - r.pos)
	r.pos = r.end
	for !r.last {
		if err := r.readBlock(); err != nil {
			return nil, err
		}
		if allZero(r.block[:r.end]) {
			zeros += int64(r.end)
			r.pos = r.end
			continue
		}
		// Data after a hole: whatever the hole held is lost. Resume
		// parsing at the start of this block on the next call.
		r.dropped += zeros + r.physical
		r.resetRecord()
		return nil, base.CorruptionErrorf("wal: %d zero bytes at offset %d followed by more data", zeros, start)
	}
	return r.endOfLog()
}

// dropBlock reports corruption at r.pos and skips the rest of the block
// (the length field cannot be trusted) together with any partial record.
func (r *Reader) dropBlock(format string, args ...any) error {
	off := r.blockOff + int64(r.pos)
	r.dropped += int64(r.end-r.pos) + r.physical
	r.resetRecord()
	r.pos = r.end
	return base.CorruptionErrorf("wal: "+format+" at offset %d", append(args, off)...)
}

// dropPending reports and discards the partially assembled record.
func (r *Reader) dropPending(off int64, msg string) error {
	r.dropped += r.physical
	r.resetRecord()
	return base.CorruptionErrorf("wal: %s before offset %d", msg, off)
}

// endOfLog ends the log: a record still being assembled was torn by the
// crash that ended the file, so it is dropped silently.
func (r *Reader) endOfLog() ([]byte, error) {
	r.dropped += r.physical
	r.resetRecord()
	r.err = io.EOF
	return nil, io.EOF
}

func (r *Reader) resetRecord() {
	r.inRecord = false
	r.physical = 0
	r.scratch = r.scratch[:0]
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// fragmentWithin reports whether the bytes after the header at r.pos,
// taken to some length no longer than what the file holds, have checksum
// sum. A torn write leaves a prefix of its fragment, which checksums at no
// length (but by a 2^-32 chance per length); a damaged length field leaves
// the whole fragment behind the header, which does.
func (r *Reader) fragmentWithin(sum uint32) bool {
	c := crc32.Update(0, castagnoli, r.block[r.pos+6:r.pos+headerSize])
	for i := r.pos + headerSize; ; i++ {
		if maskCRC(c) == sum {
			return true
		}
		if i == r.end {
			return false
		}
		c = crc32.Update(c, castagnoli, r.block[i:i+1])
	}
}
