package filter_test

import (
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
	// bloomkv.BloomFilter64 9 bytes
	// true
	// 10 bits/key, k=6, theory 0.84%
}
