module github.com/bloomkv/bloomkv/cmd/kvbench/filterpeers

go 1.24

replace github.com/bloomkv/bloomkv => ../../..

require (
	github.com/FastFilter/xorfilter v0.4.2-0.20260120015552-4e5a4d9df65a
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomkv/bloomkv v0.0.0-00010101000000-000000000000
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/greatroar/blobloom v0.8.1
	github.com/seiflotfy/cuckoofilter v0.0.0-20240715131351-a2f2c23f1771
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/dgryski/go-metro v0.0.0-20200812162917-85c65e2d0165 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
