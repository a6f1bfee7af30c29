package filter_test

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/filter"
)

func ExampleNewBloomPolicy() {
	p := filter.NewBloomPolicy(10)
	b := p.NewBuilder()
	for _, k := range []string{"apple", "banana", "cherry"} {
		b.AddKey([]byte(k))
	}
	f := b.Finish(nil) // the bytes a table stores in its filter block

	fmt.Println(p.Name(), len(f), "bytes")
	fmt.Println(p.MayContain(f, []byte("banana")))
	if bk, ok := p.(filter.BitsPerKeyer); ok {
		fmt.Printf("%d bits/key, k=%d, theory %.2f%%\n", bk.BitsPerKey(), bk.NumProbes(),
			100*filter.EstimateFPR(float64(bk.BitsPerKey()), bk.NumProbes()))
	}
	// Output:
	// bloomkv.BloomFilter64v2 9 bytes
	// true
	// 10 bits/key, k=6, theory 0.84%
}

func ExampleNewBlockedBloomPolicy() {
	p := filter.NewBlockedBloomPolicy(10)
	b := p.NewBuilder()
	for i := 0; i < 1000; i++ {
		b.AddKey([]byte(fmt.Sprintf("key%06d", i)))
	}
	f := b.Finish(nil)
	bk := p.(filter.BitsPerKeyer)
	fmt.Println(p.Name(), len(f), "bytes, k =", bk.NumProbes())
	fmt.Println(p.MayContain(f, []byte("key000042")))
	fmt.Printf("theory %.2f%%\n", 100*filter.EstimateBlockedFPR(10, bk.NumProbes()))
	// Output:
	// bloomkv.BlockedBloom3 1281 bytes, k = 6
	// true
	// theory 0.96%
}

func ExampleNewBinaryFusePolicy() {
	p := filter.NewBinaryFusePolicy(8)
	b := p.NewBuilder()
	for i := 0; i < 1000; i++ {
		b.AddKey([]byte(fmt.Sprintf("key%06d", i)))
	}
	f := b.Finish(nil)
	fmt.Println(p.Name(), len(f), "bytes")
	fmt.Println(p.MayContain(f, []byte("key000042")))
	// Output:
	// bloomkv.BinaryFuse 1423 bytes
	// true
}

func ExampleNewBloomFilter() {
	b := filter.NewBloomFilter(1_000_000, 0.01)
	fmt.Println(b.Bits(), "bits,", b.K(), "hashes")
	b.Add([]byte("apple"))
	fmt.Println(b.MayContain([]byte("apple")), b.ApproximateCount())

	data, _ := b.MarshalBinary()
	var c filter.BloomFilter
	if err := c.UnmarshalBinary(data); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c.MayContain([]byte("apple")))
	// Output:
	// 9585058 bits, 7 hashes
	// true 1
	// true
}

func ExampleNewCountingBloomFilter() {
	c := filter.NewCountingBloomFilter(1000, 0.01)
	c.Add([]byte("apple"))
	c.Add([]byte("banana"))
	c.Remove([]byte("apple"))
	fmt.Println(c.MayContain([]byte("apple")), c.MayContain([]byte("banana")))
	// Output:
	// false true
}

func ExampleNewCuckooFilter() {
	c := filter.NewCuckooFilter(1000)
	c.Add([]byte("apple"))
	c.Add([]byte("banana"))
	fmt.Println(c.Contains([]byte("apple")), c.Count(), c.Capacity(), "slots")
	c.Delete([]byte("apple"))
	fmt.Println(c.Contains([]byte("apple")), c.Count())
	// Output:
	// true 2 2048 slots
	// false 1
}

func ExampleNewScalableBloomFilter() {
	s := filter.NewScalableBloomFilter(1000, 0.01)
	for i := 0; i < 100_000; i++ {
		s.Add([]byte(fmt.Sprint(i)))
	}
	fmt.Println(s.Stages(), "stages,", s.MayContain([]byte("4242")))
	fmt.Println(s.ExpectedFPP() < 0.01)
	// Output:
	// 7 stages, true
	// true
}

func ExampleNewScalableBloomFilterWithOptions() {
	// RedisBloom's BF.RESERVE key 0.01 1000 NONSCALING.
	s, err := filter.NewScalableBloomFilterWithOptions(1000, 0.01, filter.ScalableOptions{NonScaling: true})
	if err != nil {
		panic(err)
	}
	for i := 0; err == nil; i++ {
		_, err = s.Insert([]byte(fmt.Sprint(i)))
	}
	fmt.Println(s.Count(), "keys;", errors.Is(err, filter.ErrFull))
	// Output:
	// 1000 keys; true
}

func ExampleBitsPerKeyForFPR() {
	for _, p := range []float64{0.01, 0.001} {
		bits, k := filter.BitsPerKeyForFPR(p)
		fmt.Printf("%.1f%%: %d bits/key, k=%d, %.3f%%\n", 100*p, bits, k, 100*filter.EstimateFPR(float64(bits), k))
	}
	// Output:
	// 1.0%: 10 bits/key, k=7, 0.819%
	// 0.1%: 15 bits/key, k=10, 0.074%
}

// Many keys asked of a few filters at once, as a batched lookup asks one
// table a level: each key is hashed once, and names its filter by index.
func ExampleMayContainHashBatchOf() {
	p := filter.NewBloomPolicy(10)
	var tables [][]byte
	for _, keys := range [][]string{{"apple", "banana"}, {"cherry", "damson"}} {
		b := p.NewBuilder()
		for _, k := range keys {
			b.AddKey([]byte(k))
		}
		tables = append(tables, b.Finish(nil))
	}
	hp := p.(filter.HashBatchPolicy)
	keys := [][]byte{[]byte("apple"), []byte("cherry"), []byte("cherry"), []byte("banana"), []byte("fig")}
	which := []uint8{0, 1, 0, 0, 1} // the filter each key is asked of
	hashes := make([]uint64, len(keys))
	filter.KeyHashes(hp, keys, hashes)
	maybe := make([]bool, len(keys))
	filter.MayContainHashBatchOf(hp, tables, which, hashes, maybe)
	for i, k := range keys {
		fmt.Printf("%s in filter %d: %v\n", k, which[i], maybe[i])
	}
	// Output:
	// apple in filter 0: true
	// cherry in filter 1: true
	// cherry in filter 0: false
	// banana in filter 0: true
	// fig in filter 1: false
}
