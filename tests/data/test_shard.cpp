// Token shards: round trip (uint16, uint32), header fields, corruption and truncation detected.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <QTemporaryDir>
#include <QtTest>

#include "data_test_util.h"
#include "engine/common/error.h"
#include "engine/data/shard.h"

class TestShard : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir tmp_;
  std::string path(const char* name) { return (tmp_.path() + "/" + name).toStdString(); }

  static std::vector<uint32_t> read_all(const td::ShardInfo& info) {
    std::vector<uint32_t> t(info.count);
    int fd = ::open(info.path.c_str(), O_RDONLY);
    td::read_shard_tokens(info, fd, 0, t.size(), t.data());
    ::close(fd);
    return t;
  }

 private slots:
  void roundTripUint16() {
    std::string p = path("a.bin");
    std::vector<uint32_t> tok;
    for (uint32_t i = 0; i < 3000000; ++i) tok.push_back((i * 2654435761u) >> 16);  // < 65536
    {
      td::ShardWriter w(p, 2);
      w.write(tok.data(), 5);  // several writes, across the 1 MiB buffer
      w.write(tok.data() + 5, tok.size() - 5);
      QCOMPARE(w.count(), uint64_t(tok.size()));
      QCOMPARE(w.finish(), 64 + 2 * uint64_t(tok.size()));
    }
    QVERIFY(!std::filesystem::exists(p + ".tmp"));
    td::ShardInfo info = td::read_shard_header(p);
    QCOMPARE(info.width, 2);
    QCOMPARE(info.count, uint64_t(tok.size()));
    QCOMPARE(std::filesystem::file_size(p), 64 + 2 * tok.size());
    td::verify_shard(info);
    QVERIFY(read_all(info) == tok);
    // pread of a range in the middle
    std::vector<uint32_t> mid(7);
    int fd = ::open(p.c_str(), O_RDONLY);
    td::read_shard_tokens(info, fd, 1234567, 7, mid.data());
    ::close(fd);
    QVERIFY(std::equal(mid.begin(), mid.end(), tok.begin() + 1234567));
  }

  void roundTripUint32AndHeaderBytes() {
    std::string p = path("b.bin");
    std::vector<uint32_t> tok = {0, 1, 65535, 65536, 100000, 0xFFFFFFFFu};
    td::ShardWriter w(p, 4);
    w.write(tok.data(), tok.size());
    w.finish();
    // header by hand: magic, version 1, width 4, count 6, crc32 of the payload, zeros
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    QCOMPARE(bytes.size(), size_t(64 + 24));
    QCOMPARE(bytes.substr(0, 8), std::string("TDSHARD1"));
    uint32_t version, width, crc;
    uint64_t count;
    std::memcpy(&version, bytes.data() + 8, 4);
    std::memcpy(&width, bytes.data() + 12, 4);
    std::memcpy(&count, bytes.data() + 16, 8);
    std::memcpy(&crc, bytes.data() + 24, 4);
    QCOMPARE(version, 1u);
    QCOMPARE(width, 4u);
    QCOMPARE(count, uint64_t(6));
    QCOMPARE(crc, uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + 64), 24)));
    QVERIFY(bytes.substr(28, 36) == std::string(36, '\0'));
    // little-endian payload: token 3 (65536) is bytes 00 00 01 00
    QCOMPARE(bytes.substr(64 + 12, 4), std::string("\x00\x00\x01\x00", 4));
    td::ShardInfo info = td::read_shard_header(p);
    QCOMPARE(info.crc32, crc);
    QVERIFY(read_all(info) == tok);
  }

  void tokenTooWideForUint16() {
    td::ShardWriter w(path("c.bin"), 2);
    uint32_t t[2] = {5, 70000};
    QVERIFY_THROWS_EXCEPTION(td::Error, w.write(t, 2));
  }

  void flippedPayloadByteIsAChecksumError() {
    std::string p = path("d.bin");
    std::vector<uint32_t> tok(10000, 42);
    td::ShardWriter w(p, 2);
    w.write(tok.data(), tok.size());
    w.finish();
    {
      std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(64 + 5001);
      f.put('\x07');
    }
    td::ShardInfo info = td::read_shard_header(p);  // the header is intact
    try {
      td::verify_shard(info);
      QFAIL("a flipped payload byte was not detected");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("checksum mismatch") != std::string::npos, e.what());
    }
  }

  void truncatedShardIsDetected() {
    std::string p = path("e.bin");
    std::vector<uint32_t> tok(1000, 7);
    td::ShardWriter w(p, 2);
    w.write(tok.data(), tok.size());
    w.finish();
    std::filesystem::resize_file(p, 64 + 1999);
    try {
      td::read_shard_header(p);
      QFAIL("truncation was not detected");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("truncated") != std::string::npos, e.what());
    }
    std::filesystem::resize_file(p, 30);  // shorter than the header
    QVERIFY_THROWS_EXCEPTION(td::Error, td::read_shard_header(p));
    tdtest::write_file(path("f.bin"), std::string(100, 'x'));
    QVERIFY_THROWS_EXCEPTION(td::Error, td::read_shard_header(path("f.bin")));  // bad magic
  }

  // A header whose count * width wraps 2^64: count 2^63 + 100 at width 2 says 64 + 200 bytes
  // modulo 2^64, which is the file's size, so it was accepted with 2^63 + 100 tokens.
  void tokenCountThatOverflowsIsRefused() {
    std::string h(64, '\0');
    std::memcpy(h.data(), "TDSHARD1", 8);
    const uint32_t version = 1, width = 2;
    const uint64_t count = (uint64_t(1) << 63) + 100;
    std::memcpy(h.data() + 8, &version, 4);
    std::memcpy(h.data() + 12, &width, 4);
    std::memcpy(h.data() + 16, &count, 8);
    tdtest::write_file(path("wrap.bin"), h + std::string(200, '\0'));
    try {
      td::ShardInfo info = td::read_shard_header(path("wrap.bin"));
      QFAIL(qPrintable(QString("a header with %1 tokens in a 264-byte file was accepted").arg(info.count)));
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("more than any file holds") != std::string::npos, e.what());
    }
  }

  void unfinishedWriterLeavesNoFile() {
    std::string p = path("g.bin");
    {
      td::ShardWriter w(p, 2);
      uint32_t t = 1;
      w.write(&t, 1);
    }
    QVERIFY(!std::filesystem::exists(p));
    QVERIFY(!std::filesystem::exists(p + ".tmp"));
  }
};

QTEST_APPLESS_MAIN(TestShard)
#include "test_shard.moc"
