#!/bin/sh
# roundtrip.sh: bloomkv writes to the LevelDB and goleveldb fixture stores
# (and to a store it creates in LevelDB's format), then LevelDB 1.23 itself
# and goleveldb read every key back against the model (package ldbcompat).
# Needs Go, a C++ compiler and Debian's libleveldb-dev; .ci/run installs
# them. Without libleveldb-dev it checks with goleveldb alone and says so.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump=""
if [ -f /usr/include/leveldb/db.h ] && command -v g++ >/dev/null 2>&1; then
	g++ -O2 -std=c++17 -o "$tmp/ldbdump" "$here/cpp/dump.cc" -lleveldb
	dump="-leveldb-dump=$tmp/ldbdump"
else
	echo "roundtrip.sh: libleveldb-dev or g++ missing: checking with goleveldb only" >&2
fi
cd "$here/goleveldb"
go run . roundtrip $dump "$root/db/testdata/leveldb/cpp" "$root/db/testdata/leveldb/goleveldb" new churn
