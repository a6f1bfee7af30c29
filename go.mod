module github.com/bloomkv/bloomkv

go 1.24

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/golang/snappy v1.0.0
	github.com/google/go-cmp v0.7.0
)
