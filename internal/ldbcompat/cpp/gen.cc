// gen writes the LevelDB fixture store that package ldbcompat describes,
// with LevelDB itself (Debian's libleveldb-dev, LevelDB 1.23), into the
// directory given, which must not exist:
//
//   g++ -O2 -std=c++17 -o /tmp/ldbgen internal/ldbcompat/cpp/gen.cc -lleveldb && /tmp/ldbgen db/testdata/leveldb/cpp
//
// It then prints LevelDB's own view of the tables per level.
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include <cstdio>
#include <cstdlib>
#include <string>

static const int kNumKeys = 6000;

static std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key%06d", i);
  return buf;
}

static std::string Value(int r, int i) {
  std::string v = "r" + std::to_string(r) + "-" + std::to_string(i) + "-";
  for (int j = 0; j < 2 + (i * 7) % 8; j++) v += "abcdefgh";
  return v;
}

static void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

static leveldb::DB* OpenDB(const char* dir, leveldb::CompressionType c,
                           const leveldb::FilterPolicy* fp, bool create) {
  leveldb::Options o;
  o.create_if_missing = create;
  o.error_if_exists = create;
  o.write_buffer_size = 64 << 10;
  o.max_file_size = 64 << 10;
  o.block_size = 4 << 10;
  o.compression = c;
  o.filter_policy = fp;
  leveldb::DB* db;
  Check(leveldb::DB::Open(o, dir, &db), "open");
  return db;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  const leveldb::FilterPolicy* fp = leveldb::NewBloomFilterPolicy(10);
  leveldb::WriteOptions wo;
  leveldb::DB* db = OpenDB(dir, leveldb::kSnappyCompression, fp, true);
  // 1. Round 1 in a scattered order; 2. compact everything.
  for (int j = 0; j < kNumKeys; j++) {
    int i = int((long long)j * 7919 % kNumKeys);
    Check(db->Put(wo, Key(i), Value(1, i)), "put 1");
  }
  db->CompactRange(nullptr, nullptr);
  // 3. Round 2 under a snapshot, compacted while it is held.
  const leveldb::Snapshot* snap = db->GetSnapshot();
  for (int i = 0; i < kNumKeys; i += 3) Check(db->Put(wo, Key(i), Value(2, i)), "put 2");
  for (int i = 0; i < kNumKeys; i += 7) Check(db->Delete(wo, Key(i)), "delete 2");
  db->CompactRange(nullptr, nullptr);
  db->ReleaseSnapshot(snap);
  delete db;
  // 4. Reopened without compression: round 3 fills the memtable past its
  // size, so level 0 gets raw tables.
  db = OpenDB(dir, leveldb::kNoCompression, fp, false);
  for (int i = 0; i < kNumKeys; i += 5) Check(db->Put(wo, Key(i), Value(3, i)), "put 3");
  // 5. Round 4 stays in the log: LevelDB does not flush on close.
  for (int i = 0; i < kNumKeys; i += 11) Check(db->Put(wo, Key(i), Value(4, i)), "put 4");
  for (int i = 0; i < kNumKeys; i += 13) Check(db->Delete(wo, Key(i)), "delete 4");
  std::string stats;
  db->GetProperty("leveldb.sstables", &stats);
  std::printf("%s", stats.c_str());
  delete db;
  delete fp;
  return 0;
}
