// rocksgen writes a small RocksDB store (Debian's librocksdb-dev, RocksDB
// 7.8.3) into the directory given, which must not exist: 100 keys in a
// table, one more in the log. bloomkv must refuse it clearly, changing
// nothing (db/testdata/rocksdb/store was made so, its LOG removed):
//
//   g++ -O1 -std=c++17 -o /tmp/rocksgen internal/ldbcompat/cpp/rocksgen.cc -lrocksdb && /tmp/rocksgen DIR
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <cstdio>
int main(int argc, char** argv) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.error_if_exists = true;
  o.compression = rocksdb::kSnappyCompression;
  rocksdb::DB* db;
  rocksdb::Status s = rocksdb::DB::Open(o, argv[1], &db);
  if (!s.ok()) { fprintf(stderr, "%s\n", s.ToString().c_str()); return 1; }
  for (int i = 0; i < 100; i++) {
    char k[32]; snprintf(k, sizeof k, "key%06d", i);
    db->Put(rocksdb::WriteOptions(), k, "value");
  }
  db->Flush(rocksdb::FlushOptions());
  db->Put(rocksdb::WriteOptions(), "inlog", "value");
  delete db;
  return 0;
}
