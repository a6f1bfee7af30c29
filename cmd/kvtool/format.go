package main

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// byteFormat says how keys and values are printed: as hex, or as text with
// every byte that is not printable ASCII escaped (\t, \n, \r, \\, \xNN), so
// that any byte string prints on one line and reads back unambiguously.
// Max, when positive, abbreviates longer strings to their first Max bytes.
type byteFormat struct {
	Hex bool
	Max int
}

// format renders b.
func (f byteFormat) format(b []byte) string {
	cut := b
	if f.Max > 0 && len(b) > f.Max {
		cut = b[:f.Max]
	}
	var s string
	if f.Hex {
		s = hex.EncodeToString(cut)
	} else {
		s = escape(cut)
	}
	if len(cut) < len(b) {
		s += fmt.Sprintf("...(%d bytes)", len(b))
	}
	return s
}

// formatIKey renders an internal key as key#seq,KIND.
func (f byteFormat) formatIKey(ikey []byte) string {
	ukey, seq, kind, ok := base.ParseInternalKey(ikey)
	if !ok {
		return fmt.Sprintf("<malformed internal key %s>", byteFormat{Hex: true, Max: f.Max}.format(ikey))
	}
	return fmt.Sprintf("%s#%d,%s", f.format(ukey), seq, kind)
}

// formatBound renders a table bound from a MANIFEST or a compact pointer
// as key#seq,KIND. Unlike the entries of a data block, a bound may be of
// kind RANGEDEL: the start of a range tombstone or its end
// (rangedel.BoundEnd), so it is parsed with base.ParseBoundKey.
func (f byteFormat) formatBound(ikey []byte) string {
	ukey, seq, kind, ok := base.ParseBoundKey(ikey)
	if !ok {
		return fmt.Sprintf("<malformed internal key %s>", byteFormat{Hex: true, Max: f.Max}.format(ikey))
	}
	return fmt.Sprintf("%s#%d,%s", f.format(ukey), seq, kind)
}

// formatBoundOrNone is formatBound, saying "none" for a nil bound (a table
// without entries and tombstones).
func (f byteFormat) formatBoundOrNone(ikey []byte) string {
	if ikey == nil {
		return "none"
	}
	return f.formatBound(ikey)
}

// formatBoundUser renders the user key of a table bound, as lsm lists key
// ranges. A largest bound of kind RANGEDEL comes from a range tombstone's
// end (rangedel.BoundEnd): the table holds no key past it and may hold
// none at it. It is marked " (tombstone end)".
func (f byteFormat) formatBoundUser(ikey []byte, largest bool) string {
	ukey, _, kind, ok := base.ParseBoundKey(ikey)
	switch {
	case !ok:
		return fmt.Sprintf("<malformed internal key %s>", byteFormat{Hex: true, Max: f.Max}.format(ikey))
	case largest && kind == base.KindRangeDelete:
		return f.format(ukey) + " (tombstone end)"
	}
	return f.format(ukey)
}

// formatTombstone renders a range tombstone as [start, end)#seq.
func (f byteFormat) formatTombstone(t rangedel.Tombstone) string {
	return fmt.Sprintf("[%s, %s)#%d", f.format(t.Start), f.format(t.End), t.Seq)
}

// formatSeparator renders an index separator, a key >= every key of its
// block and < every key of the next. The table writer shortens it when it
// can to a user key between the two blocks with the largest sequence
// number (and the seek kind, which means nothing here): such a key is no
// entry of the table, and is shown as its user key, escaped as other keys
// are, followed by "(max sequence)". Any other separator is the block's
// last entry, whose sequence number and kind are real: it is shown as an
// internal key, KEY#SEQ,KIND.
func (f byteFormat) formatSeparator(ikey []byte) string {
	ukey, seq, kind, ok := base.ParseInternalKey(ikey)
	switch {
	case !ok || seq != base.MaxSeqNum:
		return f.formatIKey(ikey)
	case kind != base.KindSeek:
		return fmt.Sprintf("%s (max sequence, %s)", f.format(ukey), kind)
	}
	return fmt.Sprintf("%s (max sequence)", f.format(ukey))
}

// escape renders b as text: printable ASCII except the backslash as is,
// everything else escaped.
func escape(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, `\x%02x`, c)
		}
	}
	return sb.String()
}

// parseBytes reads a key or value given on the command line: hex digits
// when hexInput is set, the argument's bytes otherwise.
func parseBytes(s string, hexInput bool) ([]byte, error) {
	if !hexInput {
		return []byte(s), nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad hex %q: %v", s, err)
	}
	return b, nil
}

// humanBytes renders a size with a binary unit, as the db's Metrics do.
func humanBytes(n uint64) string { return base.HumanBytes(int64(n)) }

// countOf renders n things, as "1 range tombstone" or "2 range tombstones".
func countOf(n uint64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
