// gen writes the LevelDB fixtures of package sstable's tests, and reads a
// table with LevelDB's own Table reader. go test never runs it: its output
// is committed under sstable/testdata/leveldb.
//
// Build (libleveldb-dev 1.23): g++ -O1 -std=c++17 -o /tmp/ldbgen gen.cc -lleveldb
//
//   ldbgen make DIR   writes two stores (block_size 1024, Bloom filter of 10
//                     bits/key; one snappy, one uncompressed) in three
//                     phases, each flushed into its own table by reopening
//                     the store; copies the tables to DIR/<store>-NNNNNN.ldb
//                     and the store's final contents to DIR/<store>.expected,
//                     one "hexkey,seq,valuelen" line per live key.
//   ldbgen dump FILE  opens the table FILE with leveldb::Table::Open
//                     (checksums verified, filter block loaded) and prints
//                     every entry as "hexkey,hexvalue" (internal keys).
//
// Every value is "s<seq>:" followed by Fill(seq, i) for i from the prefix's
// length up to the value's: seq is the sequence number LevelDB gives the
// write (a fresh store numbers writes from 1, a batch's ops consecutively),
// so a reader can rebuild every value from its key and length, and check
// that each value sits under its own key. One value in three is
// incompressible.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "leveldb/write_batch.h"

namespace {

void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

std::string Hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// Fill is byte i of a value written at sequence number seq; the Go tests
// compute the same.
char Fill(uint64_t seq, uint64_t i) {
  if (seq % 3 == 0) {
    uint64_t x = seq * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return static_cast<char>(x & 0xff);
  }
  return static_cast<char>('a' + (seq + i / 8) % 4);
}

// Rng is xorshift64*, so the fixtures are the same on every machine.
struct Rng {
  uint64_t x;
  uint64_t Next() {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 2685821657736338717ull;
  }
  int Intn(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }
};

// Store writes one store and keeps the model of its contents.
struct Store {
  std::string dir;
  leveldb::Options options;
  std::unique_ptr<leveldb::DB> db;
  std::map<std::string, std::pair<uint64_t, size_t>> model;  // seq, length
  uint64_t seq = 0;  // the sequence number of the last write
  Rng rng{0x9e3779b97f4a7c15ull};

  void Open() {
    leveldb::DB* d = nullptr;
    Check(leveldb::DB::Open(options, dir, &d), "open");
    db.reset(d);
  }

  // Reopen closes the store and opens it again, which writes the log's
  // contents into a new table.
  void Reopen() {
    db.reset();
    options.error_if_exists = false;
    Open();
  }

  std::string Value(size_t len) {
    std::string v = "s" + std::to_string(seq) + ":";
    while (v.size() < len) v.push_back(Fill(seq, v.size()));
    return v;
  }

  void Put(const std::string& k, size_t vlen) {
    seq++;
    std::string v = Value(vlen);
    Check(db->Put(leveldb::WriteOptions(), k, v), "put");
    model[k] = {seq, v.size()};
  }

  void Delete(const std::string& k) {
    seq++;
    Check(db->Delete(leveldb::WriteOptions(), k), "delete");
    model.erase(k);
  }

  // Batch writes n puts and deletes of keys k0, k1, ... in one batch.
  void Batch(const std::vector<std::string>& keys) {
    leveldb::WriteBatch b;
    auto next = model;
    for (const std::string& k : keys) {
      seq++;
      if (rng.Intn(4) == 0) {
        b.Delete(k);
        next.erase(k);
      } else {
        std::string v = Value(10 + rng.Intn(60));
        b.Put(k, v);
        next[k] = {seq, v.size()};
      }
    }
    Check(db->Write(leveldb::WriteOptions(), &b), "batch");
    model = next;
  }

  std::string Key(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "key%06d", i);
    return buf;
  }

  size_t ValueLen() {
    // Now and then a value larger than a filter's 2 KiB range, so that some
    // ranges have no block start and get an empty filter.
    return rng.Intn(80) == 0 ? 2100 + rng.Intn(1000) : 8 + rng.Intn(50);
  }
};

void Make(const std::string& out, const char* name,
          leveldb::CompressionType compression) {
  Store s;
  s.dir = out + "/tmp-" + name;
  leveldb::DestroyDB(s.dir, leveldb::Options());
  s.options.create_if_missing = true;
  s.options.error_if_exists = true;
  s.options.block_size = 1024;
  s.options.write_buffer_size = 4 << 20;  // one table per phase
  s.options.compression = compression;
  std::unique_ptr<const leveldb::FilterPolicy> policy(
      leveldb::NewBloomFilterPolicy(10));
  s.options.filter_policy = policy.get();
  s.Open();

  // Phase 1: keys that share prefixes, odd bytes, the empty key, repeats.
  const char* special[] = {"", "a", "ab", "abc", "abd", "b"};
  for (const char* k : special) s.Put(k, 20);
  s.Put(std::string("\x00", 1), 20);
  s.Put(std::string("\x00\x00", 2), 20);
  s.Put("\xff", 20);
  s.Put("\xff\xff\xfe", 20);
  for (int i = 0; i < 400; i++) s.Put(s.Key(s.rng.Intn(3000)), s.ValueLen());
  s.Reopen();

  // Phase 2: overwrites and deletes of phase 1's keys, deletes of keys
  // never written, and new keys.
  std::vector<std::string> keys;
  for (const auto& kv : s.model) keys.push_back(kv.first);
  for (int i = 0; i < 120; i++) s.Put(keys[s.rng.Intn(keys.size())], s.ValueLen());
  for (int i = 0; i < 80; i++) s.Delete(keys[s.rng.Intn(keys.size())]);
  for (int i = 0; i < 30; i++) s.Delete(s.Key(3000 + s.rng.Intn(1000)));
  for (int i = 0; i < 80; i++) s.Put(s.Key(s.rng.Intn(3000)), s.ValueLen());
  s.Reopen();

  // Phase 3: a batch, several versions of a few keys in one table, and
  // deletes of keys written in this phase.
  std::vector<std::string> batch;
  for (int i = 0; i < 30; i++) batch.push_back(s.Key(s.rng.Intn(3000)));
  s.Batch(batch);
  for (int r = 0; r < 5; r++) {
    for (int i = 0; i < 8; i++) s.Put(s.Key(100 + i), 30);
  }
  for (int i = 0; i < 80; i++) s.Put(s.Key(s.rng.Intn(3000)), s.ValueLen());
  s.Delete(s.Key(103));
  s.Delete("abc");
  s.Reopen();
  s.db.reset();

  // Copy the tables and write the expected contents.
  leveldb::Env* env = leveldb::Env::Default();
  std::vector<std::string> children;
  Check(env->GetChildren(s.dir, &children), "list");
  for (const std::string& c : children) {
    if (c.size() < 4 || c.compare(c.size() - 4, 4, ".ldb") != 0) continue;
    std::string data;
    Check(leveldb::ReadFileToString(env, s.dir + "/" + c, &data), "read table");
    Check(leveldb::WriteStringToFile(env, data, out + "/" + name + "-" + c),
          "write table");
  }
  std::string expected;
  for (const auto& kv : s.model) {
    expected += Hex(kv.first) + "," + std::to_string(kv.second.first) + "," +
                std::to_string(kv.second.second) + "\n";
  }
  Check(leveldb::WriteStringToFile(env, expected, out + "/" + name + ".expected"),
        "write expected");
  Check(leveldb::DestroyDB(s.dir, leveldb::Options()), "destroy");
}

int Dump(const std::string& path) {
  leveldb::Env* env = leveldb::Env::Default();
  uint64_t size = 0;
  Check(env->GetFileSize(path, &size), "size");
  leveldb::RandomAccessFile* file = nullptr;
  Check(env->NewRandomAccessFile(path, &file), "open file");
  std::unique_ptr<leveldb::RandomAccessFile> file_owner(file);
  std::unique_ptr<const leveldb::FilterPolicy> policy(
      leveldb::NewBloomFilterPolicy(10));
  leveldb::Options options;
  options.paranoid_checks = true;  // verify the meta blocks' checksums
  options.filter_policy = policy.get();
  leveldb::Table* table = nullptr;
  Check(leveldb::Table::Open(options, file, size, &table), "Table::Open");
  std::unique_ptr<leveldb::Table> table_owner(table);
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::printf("%s,%s\n", Hex(it->key().ToString()).c_str(),
                Hex(it->value().ToString()).c_str());
  }
  Check(it->status(), "iterate");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "make") == 0) {
    Make(argv[2], "snappy", leveldb::kSnappyCompression);
    Make(argv[2], "none", leveldb::kNoCompression);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "dump") == 0) {
    return Dump(argv[2]);
  }
  std::fprintf(stderr, "usage: ldbgen make DIR | ldbgen dump FILE\n");
  return 2;
}
