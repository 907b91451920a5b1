// DataLoader: windows disjoint across ranks and covering each global batch, inputs/targets
// shifted by one against the shard tokens, exact state/restore, reset, epochs, open errors.
#include <QTemporaryDir>
#include <QtTest>

#include <set>

#include "data_test_util.h"
#include "engine/common/error.h"
#include "engine/data/loader.h"
#include "engine/data/prepare.h"
#include "engine/tokenizer/tokenizer.h"

class TestLoader : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir tmp_;
  std::string ds_;                // byte dataset, several train shards
  std::vector<uint32_t> train_;   // its train tokens
  static constexpr int T = 16;

  td::LoaderOptions opts(int rank = 0, int world = 1) {
    td::LoaderOptions o;
    o.dataset_dir = ds_;
    o.seq_len = T;
    o.micro_batch = 2;
    o.grad_accum = 3;
    o.rank = rank;
    o.world_size = world;
    o.seed = 1234;
    return o;
  }
  // The window's T+1 tokens, found through the manifest's shard sizes (windows never cross shards).
  std::vector<uint32_t> window_tokens(uint64_t w) {
    auto m = tdtest::read_manifest(ds_);
    uint64_t first = 0;
    for (auto& s : m["splits"]["train"]["shards"]) {
      uint64_t n = s["tokens"].get<uint64_t>();
      uint64_t nw = n >= T + 1 ? (n - 1) / T : 0;
      if (w < nw) return std::vector<uint32_t>(train_.begin() + first + w * T, train_.begin() + first + w * T + T + 1);
      w -= nw;
      first += n;
    }
    return {};
  }
  std::string error_of(const td::LoaderOptions& o) {
    try {
      td::DataLoader l(o);
    } catch (const td::Error& e) {
      return e.what();
    }
    return "";
  }

 private slots:
  void initTestCase() {
    std::string text;
    for (int i = 0; i < 20000; ++i) text += char('a' + (i * 7 + i / 26) % 26);
    std::string dir = tmp_.path().toStdString();
    tdtest::write_file(dir + "/c/a.txt", text);
    td::PrepareOptions o;
    o.inputs = {dir + "/c"};
    o.out_dir = ds_ = dir + "/ds";
    o.val_fraction = 0.1;
    o.shard_tokens = 5000;
    o.quiet = true;
    td::prepare_dataset(o);
    train_ = tdtest::read_split(ds_, "train");
    QCOMPARE(train_.size(), size_t(18000));  // 20000 - round(2000) bytes; the eot is in val
  }

  void windowCount() {
    td::DataLoader l(opts());
    // 4 shards of 5000, 5000, 5000, 3000 tokens: (n-1)/16 windows each = 312+312+312+187
    QCOMPARE(l.num_windows(), uint64_t(312 * 3 + 187));
    QCOMPARE(td::dataset_vocab_size(ds_), 257);
  }

  void permutationIsFixed() {
    // Pinned so the order is the same on every platform (splitmix64 + Fisher–Yates).
    std::vector<uint32_t> p = td::epoch_permutation(10, 42, 0);
    std::vector<uint32_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < 10; ++i) QCOMPARE(sorted[i], i);
    QVERIFY(p != td::epoch_permutation(10, 42, 1));
    QVERIFY(p != td::epoch_permutation(10, 43, 0));
    QVERIFY(p == td::epoch_permutation(10, 42, 0));
    std::string s;
    for (uint32_t v : p) s += std::to_string(v) + ",";
    qInfo("epoch_permutation(10, 42, 0) = %s", s.c_str());
    QCOMPARE(s, std::string("1,7,2,5,6,4,0,9,8,3,"));  // also from a Python re-implementation
  }

  void ranksDisjointAndCoverGlobalBatch() {
    const int world = 4;
    std::vector<std::unique_ptr<td::DataLoader>> ranks;
    for (int r = 0; r < world; ++r) ranks.push_back(std::make_unique<td::DataLoader>(opts(r, world)));
    const uint64_t W = ranks[0]->num_windows(), G = 2 * 3 * world;
    std::vector<uint32_t> perm0 = td::epoch_permutation(W, 1234, 0);
    std::vector<int32_t> in, tg;
    for (uint64_t step = 0; step < 5; ++step) {
      std::vector<uint64_t> got;
      for (int r = 0; r < world; ++r) {
        for (int m = 0; m < 3; ++m) {
          std::vector<uint64_t> ids = ranks[r]->peek_window_ids();
          QCOMPARE(ids.size(), size_t(2));
          ranks[r]->next_batch(in, tg);
          QCOMPARE(in.size(), size_t(2 * T));
          for (size_t b = 0; b < ids.size(); ++b) {
            // rank r, micro m, row b is window perm[step*G + r*6 + m*2 + b]
            QCOMPARE(ids[b], uint64_t(perm0[step * G + r * 6 + m * 2 + b]));
            std::vector<uint32_t> w = window_tokens(ids[b]);
            for (int t = 0; t < T; ++t) {
              QCOMPARE(uint32_t(in[b * T + t]), w[t]);
              QCOMPARE(uint32_t(tg[b * T + t]), w[t + 1]);
            }
          }
          got.insert(got.end(), ids.begin(), ids.end());
        }
      }
      std::set<uint64_t> uniq(got.begin(), got.end());
      QCOMPARE(uniq.size(), size_t(G));  // disjoint
      std::set<uint64_t> want(perm0.begin() + step * G, perm0.begin() + (step + 1) * G);
      QVERIFY(uniq == want);  // and together the whole global batch
    }
  }

  void stateRestoreExact() {
    std::vector<int32_t> in, tg;
    td::DataLoader a(opts(1, 2));
    for (int i = 0; i < 7; ++i) a.next_batch(in, tg);  // mid-step: 7 = 2 steps + 1 micro batch
    td::LoaderState s = a.state();
    QCOMPARE(s.micro, uint64_t(1));
    QCOMPARE(s.cursor, uint64_t(2 * 12));
    std::vector<std::vector<int32_t>> next;
    for (int i = 0; i < 300; ++i) {  // past an epoch end (93 steps of 12 windows = 279 micro batches)
      a.next_batch(in, tg);
      next.push_back(in);
      next.push_back(tg);
    }
    QVERIFY(a.state().epoch >= 1);
    td::DataLoader b(opts(1, 2));
    b.restore(td::LoaderState::from_json(s.to_json()));
    for (int i = 0; i < 300; ++i) {
      b.next_batch(in, tg);
      QVERIFY(in == next[2 * i]);
      QVERIFY(tg == next[2 * i + 1]);
    }
    QVERIFY(a.state().to_json() == b.state().to_json());
  }

  void statsCountTheBatchesReturned() {
    // LoaderStats (the step event's data_* figures): each batch returned counts micro_batch
    // windows of T+1 tokens of 2 bytes (the byte tokenizer's 257 ids need 2), whether it was
    // prefetched or read by next_batch itself (a prefetch not yet returned does not count).
    std::vector<int32_t> in, tg;
    td::DataLoader l(opts());
    QCOMPARE(l.stats().bytes_read, uint64_t(0));
    for (int i = 0; i < 5; ++i) l.next_batch(in, tg);
    QCOMPARE(l.stats().bytes_read, uint64_t(5 * 2 * (T + 1) * 2));  // 340
    l.restore(td::LoaderState{});  // the next batch is read by next_batch itself
    l.next_batch(in, tg);
    const td::LoaderStats s = l.stats();
    QCOMPARE(s.bytes_read, uint64_t(6 * 2 * (T + 1) * 2));
    QVERIFY(s.read_seconds > 0);
    QVERIFY(s.wait_seconds >= 0);
  }

  void resetAndEpochs() {
    std::vector<int32_t> in, tg, first_in;
    td::DataLoader l(opts());
    l.next_batch(first_in, tg);
    const uint64_t steps = l.num_windows() / 6;  // 187 full steps per epoch; 1 window dropped
    for (uint64_t i = 1; i < steps * 3; ++i) l.next_batch(in, tg);
    QCOMPARE(l.state().epoch, uint64_t(1));
    QCOMPARE(l.state().cursor, uint64_t(0));
    std::vector<uint64_t> e1 = l.peek_window_ids();
    QCOMPARE(e1[0], uint64_t(td::epoch_permutation(l.num_windows(), 1234, 1)[0]));
    l.reset();
    QCOMPARE(l.state().epoch, uint64_t(0));
    l.next_batch(in, tg);
    QVERIFY(in == first_in);
  }

  void noShuffleIsInOrder() {
    td::LoaderOptions o = opts();
    o.shuffle = false;
    td::DataLoader l(o);
    std::vector<int32_t> in, tg;
    QVERIFY(l.peek_window_ids() == (std::vector<uint64_t>{0, 1}));
    l.next_batch(in, tg);
    for (int t = 0; t < T; ++t) QCOMPARE(uint32_t(in[t]), train_[t]);
    QVERIFY(l.peek_window_ids() == (std::vector<uint64_t>{2, 3}));
  }

  void openErrors() {
    td::LoaderOptions o = opts();
    o.seq_len = 5000;  // each shard has <= 5000 tokens: no window fits
    std::string msg = error_of(o);
    QVERIFY2(msg.find("shorter than one window (seq_len+1 = 5001)") != std::string::npos, msg.c_str());
    o = opts();
    o.split = "val";  // 2001 tokens = 125 windows < 6 * 40 per global batch
    o.world_size = 40;
    msg = error_of(o);
    QVERIFY2(msg.find("fewer than one global batch") != std::string::npos, msg.c_str());
    o = opts();
    o.dataset_dir = tmp_.path().toStdString() + "/c";
    msg = error_of(o);
    QVERIFY2(msg.find("no manifest.json") != std::string::npos, msg.c_str());
    QVERIFY_THROWS_EXCEPTION(td::Error, td::dataset_vocab_size(o.dataset_dir));

    // A corrupted and a truncated copy of the dataset.
    namespace fs = std::filesystem;
    std::string bad = tmp_.path().toStdString() + "/bad";
    fs::copy(ds_, bad);
    {
      std::fstream f(bad + "/train_000001.bin", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(64 + 100);
      f.put('\x01');
    }
    o = opts();
    o.dataset_dir = bad;
    msg = error_of(o);
    QVERIFY2(msg.find("checksum mismatch") != std::string::npos, msg.c_str());
    fs::resize_file(bad + "/train_000001.bin", 64 + 4000);
    msg = error_of(o);
    QVERIFY2(msg.find("truncated") != std::string::npos, msg.c_str());
  }

  // A manifest from elsewhere is checked before a file it names is opened: a shard outside the
  // dataset directory ("../x", "/abs") was opened and trained on; a shard entry of the wrong
  // type threw nlohmann's type_error instead of a message; a model file outside it was loaded.
  void manifestNamesOnlyFilesInsideTheDataset() {
    namespace fs = std::filesystem;
    const std::string root = tmp_.path().toStdString();
    const std::string evil = root + "/evil";
    fs::copy(ds_, evil);
    nlohmann::json m = tdtest::read_manifest(evil);
    auto write = [&](const nlohmann::json& doc) { tdtest::write_file(evil + "/manifest.json", doc.dump()); };
    td::LoaderOptions o = opts();
    o.dataset_dir = evil;
    const std::string outside_name = "../" + fs::path(ds_).filename().string() + "/train_000000.bin";
    for (const std::string& name : {outside_name, fs::absolute(ds_ + "/train_000000.bin").string()}) {
      nlohmann::json bad = m;
      bad["splits"]["train"]["shards"][0]["file"] = name;
      write(bad);
      const std::string msg = error_of(o);
      QVERIFY2(msg.find("is damaged") != std::string::npos && msg.find("a file name in the dataset directory") != std::string::npos,
               qPrintable(QString::fromStdString("shard '" + name + "' was opened, or: " + msg)));
    }
    nlohmann::json bad = m;
    bad["splits"]["train"]["shards"][0]["file"] = 7;
    write(bad);
    try {
      td::DataLoader l(o);
      QFAIL("a shard named 7 was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("is damaged") != std::string::npos, e.what());
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("not a td::Error but: ") + e.what()));
    }
    bad = m;
    bad["tokenizer"]["vocab_size"] = "257";
    write(bad);
    try {
      td::dataset_vocab_size(evil);
      QFAIL("vocab_size \"257\" was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("tokenizer.vocab_size") != std::string::npos, e.what());
    }
    bad = m;
    bad["tokenizer"]["kind"] = "bpe";
    bad["tokenizer"]["model_file"] = "/etc/passwd";
    write(bad);
    try {
      td::Tokenizer::load(evil);
      QFAIL("a tokenizer model outside the dataset was loaded");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("tokenizer.model_file") != std::string::npos, e.what());
    }
    write(m);  // the dataset itself is fine
    td::DataLoader fine(o);
    QVERIFY(fine.num_windows() > 0);
  }
};

QTEST_APPLESS_MAIN(TestLoader)
#include "test_loader.moc"
