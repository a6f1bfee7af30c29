package filter

import (
	"fmt"
	"testing"
)

// TestGoLevelDBBloomPolicy: goleveldb's name reads goleveldb's filters
// (LevelDB's encoding, unsigned hash) and the filters of LevelDB releases
// before the "2", which hashed a key's tail bytes as signed chars on x86:
// no present key is ever refused, whichever wrote the filter; keys with no
// high tail byte get the same answers as NewLevelDBBloomPolicy.
func TestGoLevelDBBloomPolicy(t *testing.T) {
	p := NewGoLevelDBBloomPolicy(10)
	ref := NewLevelDBBloomPolicy(10)
	if p.Name() != "leveldb.BuiltinBloomFilter" || ref.Name() != "leveldb.BuiltinBloomFilter2" {
		t.Fatalf("names %q, %q", p.Name(), ref.Name())
	}
	var keys [][]byte
	for i := 0; i < 2000; i++ {
		// Lengths 5..8, tails with bytes >= 0x80 half the time.
		k := []byte(fmt.Sprintf("k%04d", i))
		for j := 0; j < i%4; j++ {
			k = append(k, byte(0x70+i*13+j*41))
		}
		keys = append(keys, k)
	}
	// A filter as goleveldb writes it (unsigned) and as old LevelDB on x86
	// wrote it (signed tails).
	unsigned := ref.NewBuilder()
	for _, k := range keys {
		unsigned.AddKey(k)
	}
	fu := unsigned.Finish(nil)
	k := int(fu[len(fu)-1])
	fs := make([]byte, len(fu))
	fs[len(fs)-1] = byte(k)
	for _, key := range keys {
		levelDBAdd(fs[:len(fs)-1], levelDBHashSignedTail(key, levelDBBloomSeed), k)
	}
	high := 0
	for _, key := range keys {
		if highTail(key) {
			high++
		}
		if !p.MayContain(fu, key) || !p.MayContain(fs, key) {
			t.Fatalf("key %x refused (unsigned %v, signed %v)", key, p.MayContain(fu, key), p.MayContain(fs, key))
		}
	}
	if high < 500 {
		t.Fatalf("only %d keys with a high tail byte", high)
	}
	// The signed filter refuses some present high-tail keys under the
	// "2" policy: the difference is real, and the OR is needed.
	refused := 0
	for _, key := range keys {
		if highTail(key) && !ref.MayContain(fs, key) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the signed-tail filter never differed: the test does not test")
	}
	// Absent keys without a high tail: the same answers as the "2" policy.
	for i := 0; i < 5000; i++ {
		a := []byte(fmt.Sprintf("absent%06d", i))
		if p.MayContain(fu, a) != ref.MayContain(fu, a) {
			t.Fatalf("%q: answers differ", a)
		}
	}
	t.Logf("%d high-tail keys; the \"2\" policy would refuse %d of them in an old LevelDB filter", high, refused)
}
