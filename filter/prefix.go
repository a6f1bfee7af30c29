package filter

import (
	"bytes"
	"fmt"
)

// Prefix extracts the prefix of a key, for prefix filters: a table built
// with an extractor adds each key's prefix to its filter besides the key,
// so a scan bounded to one prefix can ask the filter whether the table
// holds any key with that prefix and skip the table when it does not.
//
// An extractor must be consistent: if p is the prefix of some key, every
// key that starts with p has prefix p. FixedPrefix and DelimitedPrefix
// are; a custom extractor that is not makes prefix scans skip tables that
// hold matching keys.
type Prefix interface {
	// Name identifies the extractor and its parameters. It is recorded
	// in each table; a table whose extractor has another name (or none)
	// is not prefix-filtered.
	Name() string
	// PrefixLen returns the length of key's prefix, and false when key is
	// outside the extractor's domain (it has no prefix). It must not
	// allocate.
	PrefixLen(key []byte) (int, bool)
}

// FixedPrefix returns the extractor whose prefix is a key's first n bytes;
// keys shorter than n have none. n must be positive.
func FixedPrefix(n int) Prefix {
	if n <= 0 {
		panic(fmt.Sprintf("filter: FixedPrefix(%d): the length must be positive", n))
	}
	return fixedPrefix(n)
}

type fixedPrefix int

func (p fixedPrefix) Name() string { return fmt.Sprintf("bloomkv.FixedPrefix(%d)", int(p)) }

func (p fixedPrefix) PrefixLen(key []byte) (int, bool) {
	if len(key) < int(p) {
		return 0, false
	}
	return int(p), true
}

// DelimitedPrefix returns the extractor whose prefix is a key up to and
// including the first sep ("user:" for "user:42:name" and sep ':'); keys
// without sep have none.
func DelimitedPrefix(sep byte) Prefix { return delimitedPrefix(sep) }

type delimitedPrefix byte

func (p delimitedPrefix) Name() string {
	return fmt.Sprintf("bloomkv.DelimitedPrefix(%#02x)", byte(p))
}

func (p delimitedPrefix) PrefixLen(key []byte) (int, bool) {
	i := bytes.IndexByte(key, byte(p))
	if i < 0 {
		return 0, false
	}
	return i + 1, true
}

// ScanPrefix returns the prefix every key in [lower, upper) has under p,
// and false when the range is not confined to one prefix: lower must have
// a prefix q, and upper must be at most q's successor (the first key
// after every key that starts with q). A nil upper is unbounded.
func ScanPrefix(p Prefix, lower, upper []byte) ([]byte, bool) {
	if p == nil || upper == nil {
		return nil, false
	}
	n, ok := p.PrefixLen(lower)
	if !ok || n > len(lower) {
		return nil, false
	}
	q := lower[:n]
	// upper <= successor(q): upper starts with q, or upper sorts before
	// the successor, which is q with its last non-0xff byte incremented
	// and the rest dropped.
	if bytes.HasPrefix(upper, q) {
		return q, true
	}
	i := len(q) - 1
	for i >= 0 && q[i] == 0xff {
		i--
	}
	if i < 0 {
		return q, true // q is all 0xff: no successor, every key above starts with q
	}
	// successor = q[:i] + (q[i]+1)
	if c := bytes.Compare(upper[:min(len(upper), i)], q[:i]); c != 0 {
		return q, c < 0
	}
	if len(upper) <= i {
		return q, true
	}
	switch {
	case upper[i] < q[i]+1:
		return q, true
	case upper[i] == q[i]+1:
		return q, len(upper) == i+1
	}
	return nil, false
}
