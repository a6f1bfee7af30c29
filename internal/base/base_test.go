package base

import (
	"bytes"
	"errors"
	"math/rand"
	"sort"
	"testing"
)

func TestInternalKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		ukey string
		seq  uint64
		kind Kind
	}{{"", 0, KindDelete}, {"a", 1, KindSet}, {"a\x00b", MaxSeqNum, KindSet}, {"zz", 12345, KindDelete}} {
		ik := MakeInternalKey([]byte(tc.ukey), tc.seq, tc.kind)
		u, s, k, ok := ParseInternalKey(ik)
		if !ok || string(u) != tc.ukey || s != tc.seq || k != tc.kind {
			t.Fatalf("round trip %+v: got %q %d %v %v", tc, u, s, k, ok)
		}
	}
	if _, _, _, ok := ParseInternalKey([]byte("short")); ok {
		t.Fatal("short key parsed")
	}
	bad := MakeInternalKey([]byte("k"), 1, Kind(7))
	if _, _, _, ok := ParseInternalKey(bad); ok {
		t.Fatal("unknown kind parsed")
	}
}

func TestCompareInternalOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type e struct {
		u   []byte
		seq uint64
		k   Kind
	}
	var es []e
	var keys [][]byte
	for i := 0; i < 2000; i++ {
		u := make([]byte, rng.Intn(4))
		rng.Read(u)
		x := e{u, uint64(rng.Intn(50)), Kind(rng.Intn(2))}
		es = append(es, x)
		keys = append(keys, MakeInternalKey(x.u, x.seq, x.k))
	}
	sort.Slice(keys, func(i, j int) bool { return CompareInternal(keys[i], keys[j]) < 0 })
	for i := 1; i < len(keys); i++ {
		ua, sa, ka, _ := ParseInternalKey(keys[i-1])
		ub, sb, kb, _ := ParseInternalKey(keys[i])
		c := bytes.Compare(ua, ub)
		if c > 0 || (c == 0 && (sa < sb || (sa == sb && ka < kb))) {
			t.Fatalf("order violated at %d: %s then %s", i, FormatInternalKey(keys[i-1]), FormatInternalKey(keys[i]))
		}
	}
	// A seek key sorts before every visible version of its user key.
	sk := MakeSeekKey([]byte("k"), 10)
	if CompareInternal(sk, MakeInternalKey([]byte("k"), 10, KindSet)) > 0 ||
		CompareInternal(sk, MakeInternalKey([]byte("k"), 9, KindDelete)) >= 0 ||
		CompareInternal(sk, MakeInternalKey([]byte("k"), 11, KindDelete)) <= 0 {
		t.Fatal("seek key misplaced")
	}
}

func TestCorruptionErrorf(t *testing.T) {
	err := CorruptionErrorf("block %d", 3)
	if !errors.Is(err, ErrCorruption) || err.Error() != "bloomkv: corruption: block 3" {
		t.Fatalf("got %v", err)
	}
}
