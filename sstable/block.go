package sstable

import (
	"encoding/binary"
)

// blockBuilder builds one block: prefix-compressed entries with a restart
// point every restartInterval entries, then the restart array and count.
// Keys must be added in increasing order (the builder does not check).
type blockBuilder struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart point
	nEntries        int
	lastKey         []byte
}

func (b *blockBuilder) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.nEntries = 0
	b.lastKey = b.lastKey[:0]
}

func (b *blockBuilder) empty() bool { return b.nEntries == 0 }

// estimatedSize is the size finish would return now.
func (b *blockBuilder) estimatedSize() int {
	n := len(b.restarts)
	if n == 0 {
		n = 1
	}
	return len(b.buf) + 4*n + 4
}

func (b *blockBuilder) add(key, value []byte) {
	shared := 0
	if b.counter < b.restartInterval && b.nEntries > 0 {
		n := min(len(key), len(b.lastKey))
		for shared < n && key[shared] == b.lastKey[shared] {
			shared++
		}
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
	b.nEntries++
}

// finish appends the restart array and count and returns the block, which
// aliases the builder's buffer until the next reset.
func (b *blockBuilder) finish() []byte {
	if len(b.restarts) == 0 {
		b.restarts = append(b.restarts, 0)
	}
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}
