// dump prints every key and value of a LevelDB store, one "hex(key)
// hex(value)" line each, in key order, reading it with LevelDB itself
// (Debian's libleveldb-dev, LevelDB 1.23). The round-trip check
// (roundtrip.sh) uses it to read a store bloomkv wrote:
//
//   g++ -O2 -std=c++17 -o /tmp/ldbdump internal/ldbcompat/cpp/dump.cc -lleveldb && /tmp/ldbdump DIR
//
// paranoid_checks is on, so damage LevelDB would otherwise skip fails it.
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>

#include <cstdio>
#include <memory>

static void Hex(const leveldb::Slice& s) {
  for (size_t i = 0; i < s.size(); i++) std::printf("%02x", (unsigned char)s[i]);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::unique_ptr<const leveldb::FilterPolicy> fp(leveldb::NewBloomFilterPolicy(10));
  leveldb::Options o;
  o.paranoid_checks = true;
  o.filter_policy = fp.get();
  leveldb::DB* db;
  leveldb::Status s = leveldb::DB::Open(o, argv[1], &db);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
    return 1;
  }
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Hex(it->key());
    std::printf(" ");
    Hex(it->value());
    std::printf("\n");
  }
  s = it->status();
  it.reset();
  delete db;
  if (!s.ok()) {
    std::fprintf(stderr, "iterate: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
