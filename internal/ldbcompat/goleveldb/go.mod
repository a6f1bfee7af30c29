module github.com/bloomkv/bloomkv/internal/ldbcompat/goleveldb

go 1.24

replace github.com/bloomkv/bloomkv => ../../..

require (
	github.com/bloomkv/bloomkv v0.0.0-00010101000000-000000000000
	github.com/syndtr/goleveldb v1.0.1-0.20220721030215-126854af5e6d
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
)
