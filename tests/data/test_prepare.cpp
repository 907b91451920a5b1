// prepare_dataset: hand-counted tokens and splits, the directory walk, every bad input (with
// no output left behind), reuse of a finished dataset, and a real corpus with both tokenizers.
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>

#include "data_test_util.h"
#include "engine/common/error.h"
#include "engine/data/prepare.h"
#include "engine/tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using tdtest::write_file;

namespace {
// The real test corpus (fortunes, or the one tdtest::real_corpus names) as one line: its
// newlines made spaces.
std::string one_line_real_corpus() {
  std::ifstream in(tdtest::real_corpus() == "/usr/share/games/fortunes" ? "/usr/share/games/fortunes/fortunes" : tdtest::real_corpus(),
                   std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}
}  // namespace

class TestPrepare : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir tmp_;
  std::string p(const std::string& rel) { return tmp_.path().toStdString() + "/" + rel; }

  static std::vector<uint32_t> bytes_of(const std::string& s) {
    return std::vector<uint32_t>(reinterpret_cast<const unsigned char*>(s.data()),
                                 reinterpret_cast<const unsigned char*>(s.data()) + s.size());
  }
  static std::vector<uint32_t> cat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  td::PrepareOptions opts(std::vector<std::string> in, const std::string& out) {
    td::PrepareOptions o;
    o.inputs = std::move(in);
    o.out_dir = out;
    o.quiet = true;
    return o;
  }
  // Runs prepare expecting a td::Error; returns its message ("" if none was thrown).
  static std::string error_of(const td::PrepareOptions& o) {
    try {
      td::prepare_dataset(o);
    } catch (const td::Error& e) {
      return e.what();
    }
    return "";
  }
  // Nothing named <out> or <out>.tmp-* beside it.
  static bool nothing_left(const std::string& out) {
    if (fs::exists(out)) return false;
    if (!fs::exists(fs::path(out).parent_path())) return true;
    std::string stem = fs::path(out).filename().string() + ".tmp-";
    for (auto& e : fs::directory_iterator(fs::path(out).parent_path()))
      if (e.path().filename().string().rfind(stem, 0) == 0) return false;
    return true;
  }

 private slots:
  void byteTokensAndSplitByHand() {
    write_file(p("c1/a.txt"), "hello\n");    // 6 bytes
    write_file(p("c1/b.txt"), "world!!\n");  // 8 bytes
    // 14 input bytes, val_fraction 0.5: val starts at input byte 14 - round(7) = 7, the 'o' of
    // "world". train = "hello\n" <eot> "w" (8 tokens), val = "orld!!\n" <eot> (8 tokens).
    td::PrepareOptions o = opts({p("c1")}, p("o1"));
    o.val_fraction = 0.5;
    td::PrepareResult r = td::prepare_dataset(o);
    QCOMPARE(r.train_tokens, uint64_t(8));
    QCOMPARE(r.val_tokens, uint64_t(8));
    QCOMPARE(r.bytes_read, uint64_t(14));
    QCOMPARE(r.vocab_size, 257);
    QVERIFY(tdtest::read_split(p("o1"), "train") == cat(cat(bytes_of("hello\n"), {256}), bytes_of("w")));
    QVERIFY(tdtest::read_split(p("o1"), "val") == cat(bytes_of("orld!!\n"), {256}));
    auto m = tdtest::read_manifest(p("o1"));
    QCOMPARE(m["format_version"].get<int>(), 1);
    QCOMPARE(m["tokenizer"]["kind"].get<std::string>(), std::string("byte"));
    QCOMPARE(m["tokenizer"]["vocab_size"].get<int>(), 257);
    QCOMPARE(m["tokenizer"]["eot_id"].get<int>(), 256);
    QCOMPARE(m["token_dtype"].get<std::string>(), std::string("uint16"));
    QCOMPARE(m["val_fraction"].get<double>(), 0.5);
    QCOMPARE(m["sources"].size(), size_t(2));
    QCOMPARE(m["sources"][0]["bytes"].get<uint64_t>(), uint64_t(6));
    QCOMPARE(m["sources"][0]["crc32"].get<std::string>(), std::string("363a3020"));  // crc32("hello\n")
    QCOMPARE(m["splits"]["train"]["shards"][0]["file"].get<std::string>(), std::string("train_000000.bin"));
    QCOMPARE(td::Tokenizer::load(p("o1"))->kind(), std::string("byte"));

    // no validation split; and small shards roll over: 16 tokens in shards of 5
    o.val_fraction = 0;
    o.shard_tokens = 5;
    o.out_dir = p("o1b");
    r = td::prepare_dataset(o);
    QCOMPARE(r.train_tokens, uint64_t(16));
    QCOMPARE(r.val_tokens, uint64_t(0));
    auto m2 = tdtest::read_manifest(p("o1b"));
    QCOMPARE(m2["splits"]["train"]["shards"].size(), size_t(4));  // 5+5+5+1
    QCOMPARE(m2["splits"]["val"]["shards"].size(), size_t(0));
    QCOMPARE(tdtest::read_split(p("o1b"), "train").size(), size_t(16));
  }

  void jsonlDocuments() {
    write_file(p("c2/docs.jsonl"), "{\"text\": \"ab\"}\n\n{\"text\": \"c\\u00e9\", \"id\": 3}\n");
    td::PrepareOptions o = opts({p("c2")}, p("o2"));
    o.val_fraction = 0;
    td::PrepareResult r = td::prepare_dataset(o);
    // "ab" <eot> "c" U+00E9 (C3 A9) <eot>; the blank line is no document
    std::vector<uint32_t> want = {'a', 'b', 256, 'c', 0xC3, 0xA9, 256};
    QCOMPARE(r.train_tokens, uint64_t(want.size()));
    QVERIFY(tdtest::read_split(p("o2"), "train") == want);
  }

  void directoryWalk() {
    write_file(p("c3/a.txt"), "aaaa");               // 4 bytes
    write_file(p("c3/sub/b.md"), "bb");              // 2
    write_file(p("c3/sub/deeper/c"), "ccc");         // 3 (no extension)
    write_file(p("c3/sub/d.jsonl"), "{\"text\":\"dd\"}\n");  // 14 bytes, 2 text bytes
    write_file(p("c3/x.dat"), std::string("\x00\x00\x00\x02rest", 8));
    write_file(p("c3/y.u8"), "text with an unknown extension");
    write_file(p("c3/.hidden"), "secret");
    fs::create_directory_symlink("..", p("c3/sub/loop"));   // back to c3: a loop
    fs::create_symlink("a.txt", p("c3/link.txt"));           // a.txt again
    td::PrepareOptions o = opts({p("c3"), p("c3/a.txt")}, p("o3"));  // a.txt named twice
    o.val_fraction = 0;
    td::PrepareResult r = td::prepare_dataset(o);
    // a, link(skipped), sub/b.md, sub/d.jsonl, sub/deeper/c: 4 + 2 + 2 + 3 bytes + 4 eot
    QCOMPARE(r.train_tokens, uint64_t(4 + 2 + 2 + 3 + 4));
    QCOMPARE(r.bytes_read, uint64_t(4 + 2 + 14 + 3));
    auto m = tdtest::read_manifest(p("o3"));
    QCOMPARE(m["sources"].size(), size_t(4));
    QCOMPARE(m["sources"][0]["path"].get<std::string>(), p("c3/a.txt"));
    QCOMPARE(m["sources"][1]["path"].get<std::string>(), p("c3/sub/b.md"));
    QCOMPARE(m["sources"][2]["kind"].get<std::string>(), std::string("jsonl"));
    QCOMPARE(m["sources"][3]["path"].get<std::string>(), p("c3/sub/deeper/c"));
    std::map<std::string, std::string> skipped;
    for (auto& s : m["skipped"]) skipped[s["path"]] = s["reason"];
    QCOMPARE(skipped.size(), size_t(6));
    QVERIFY(skipped[p("c3/x.dat")].find("binary") != std::string::npos);
    QVERIFY(skipped[p("c3/y.u8")].find("not a text type") != std::string::npos);
    QVERIFY(skipped[p("c3/link.txt")].find("same file as " + p("c3/a.txt")) != std::string::npos);
    QVERIFY(skipped[p("c3/sub/loop")].find("already walked") != std::string::npos);
    QVERIFY(skipped[p("c3/.hidden")].find("hidden") != std::string::npos);
    QVERIFY(skipped[p("c3/a.txt")].find("same file") != std::string::npos);  // the named copy
    QCOMPARE(r.skipped.size(), size_t(6));
  }

  void badInputsLeaveNothing() {
    write_file(p("bad/only.dat"), std::string("\x01\x00\x02", 3));
    write_file(p("bad/bin.txt"), std::string("abc\0def", 7));
    std::string late_invalid = std::string(9000, 'a') + "\xff" + "tail";
    write_file(p("bad/latin.txt"), late_invalid);
    write_file(p("bad/ok.txt"), "some text\n");
    write_file(p("bad/broken.jsonl"), "{\"text\": \"fine\"}\n{\"txt\": 1}\n");
    struct Case { const char* name; td::PrepareOptions o; const char* needle; };
    std::vector<Case> cases;
    auto add = [&](const char* name, td::PrepareOptions o, const char* needle) { cases.push_back({name, o, needle}); };
    td::PrepareOptions o = opts({p("bad/only.dat")}, "");
    add("empty corpus", opts({p("bad")}, p("out_empty")), "");  // replaced below
    cases.clear();
    write_file(p("empty/x.dat"), std::string("\x00", 1));
    add("empty corpus", opts({p("empty")}, p("out_e1")), "corpus is empty");
    add("binary named", opts({p("bad/bin.txt")}, p("out_e2")), "binary");
    o = opts({p("bad/latin.txt")}, p("out_e3"));
    o.tokenizer = "bpe";
    o.vocab_size = 300;
    add("invalid utf-8 with bpe", o, "invalid UTF-8 at byte 9000");
    o = opts({p("bad/ok.txt")}, p("out_e4"));
    o.vocab_size = 300;
    add("byte vocab 300", o, "exactly 257");
    o = opts({p("bad/ok.txt")}, p("out_e5"));
    o.tokenizer = "bpe";
    o.vocab_size = 100;
    add("bpe vocab 100", o, "out of range");
    o.vocab_size = 70000;  // fits uint32 shards, but not this 10-byte corpus
    add("bpe vocab too big for the corpus", o, "choose a smaller --vocab-size");
    add("missing input", opts({p("nope/none.txt")}, p("out_e6")), "does not exist");
    o = opts({p("bad/ok.txt")}, p("out_e7"));
    o.val_fraction = 0.7;
    add("val_fraction", o, "--val-fraction");
    add("bad jsonl", opts({p("bad/broken.jsonl")}, p("out_e8")), "line 2 has no \"text\"");
    o = opts({p("bad/ok.txt")}, p("deep/er/out_e9"));
    o.tokenizer = "wordpiece";
    add("tokenizer kind", o, "not known");
    for (const Case& c : cases) {
      std::string msg = error_of(c.o);
      QVERIFY2(msg.find(c.needle) != std::string::npos, (std::string(c.name) + ": got '" + msg + "'").c_str());
      QVERIFY2(nothing_left(c.o.out_dir), c.name);
    }
    QVERIFY(!fs::exists(p("deep")));  // parents prepare would have created are gone too
    // latin-1 text is fine for the byte tokenizer (only the first 8 KB are sniffed)
    td::PrepareOptions b = opts({p("bad/latin.txt")}, p("out_latin"));
    QCOMPARE(td::prepare_dataset(b).train_tokens + td::prepare_dataset(b).val_tokens, uint64_t(9005 + 1));
  }

  void existingOutput() {
    write_file(p("c4/a.txt"), "first corpus\n");
    write_file(p("c4b/b.txt"), "second corpus\n");
    td::PrepareOptions o = opts({p("c4")}, p("o4"));
    td::PrepareResult r1 = td::prepare_dataset(o);
    QVERIFY(!r1.reused);
    auto before = fs::last_write_time(p("o4/manifest.json"));
    td::PrepareResult r2 = td::prepare_dataset(o);  // same inputs and options: nothing to do
    QVERIFY(r2.reused);
    QCOMPARE(r2.train_tokens, r1.train_tokens);
    QCOMPARE(r2.val_tokens, r1.val_tokens);
    QVERIFY(fs::last_write_time(p("o4/manifest.json")) == before);
    td::PrepareOptions other = opts({p("c4b")}, p("o4"));
    std::string msg = error_of(other);
    QVERIFY2(msg.find("already holds a different dataset") != std::string::npos, msg.c_str());
    other = o;
    other.val_fraction = 0.2;
    msg = error_of(other);
    QVERIFY2(msg.find("other options") != std::string::npos, msg.c_str());
    QCOMPARE(tdtest::read_manifest(p("o4"))["sources"][0]["path"].get<std::string>(), p("c4/a.txt"));  // intact
    write_file(p("o5/notes.txt"), "mine");
    msg = error_of(opts({p("c4")}, p("o5")));
    QVERIFY2(msg.find("holds other files") != std::string::npos, msg.c_str());
    QVERIFY(fs::exists(p("o5/notes.txt")));
    fs::create_directories(p("o6"));  // an empty directory is fine
    QCOMPARE(td::prepare_dataset(opts({p("c4")}, p("o6"))).train_tokens, r1.train_tokens);
  }

  // An independent implementation: sentencepiece's own spm_encode (Debian package
  // sentencepiece) gives, line by line, the ids prepare wrote (prepare adds "\n" and eot).
  void bpeMatchesSpmEncode() {
    const QString spm = QStandardPaths::findExecutable("spm_encode");
    if (spm.isEmpty()) QSKIP("spm_encode not installed (apt-get install sentencepiece)");
    std::string text;
    {
      std::ifstream in(tdtest::real_corpus() == "/usr/share/games/fortunes" ? "/usr/share/games/fortunes/fortunes"
                                                                             : tdtest::real_corpus(), std::ios::binary);
      text = std::string((std::istreambuf_iterator<char>(in)), {});
    }
    text = text.substr(0, 300000);
    text = text.substr(0, text.rfind('\n') + 1);
    write_file(p("spm/corpus.txt"), text);
    td::PrepareOptions o = opts({p("spm/corpus.txt")}, p("spm_ds"));
    o.tokenizer = "bpe";
    o.vocab_size = 600;
    o.val_fraction = 0;
    td::prepare_dataset(o);
    auto m = tdtest::read_manifest(p("spm_ds"));
    const uint32_t nl = m["tokenizer"]["newline_id"].get<uint32_t>(), eot = m["tokenizer"]["eot_id"].get<uint32_t>();
    QProcess proc;
    proc.setStandardInputFile(QString::fromStdString(p("spm/corpus.txt")));
    proc.start(spm, {"--model=" + QString::fromStdString(p("spm_ds/tokenizer.model")), "--output_format=id"});
    QVERIFY(proc.waitForFinished(60000));
    QCOMPARE(proc.exitCode(), 0);
    std::vector<uint32_t> want;
    for (const QByteArray& line : proc.readAllStandardOutput().split('\n')) {
      if (line.isNull()) continue;
      for (const QByteArray& id : line.split(' '))
        if (!id.isEmpty()) want.push_back(id.toUInt());
      want.push_back(nl);
    }
    want.pop_back();  // split() gives an empty piece after the last "\n"
    want.push_back(eot);
    std::vector<uint32_t> got = tdtest::read_split(p("spm_ds"), "train");
    QCOMPARE(got.size(), want.size());
    QVERIFY(got == want);
  }

  // A corpus without line breaks (text8, minified text) prepares with bpe: training cuts its one
  // line into sentences at spaces (else at a character boundary), in the middle of the file as
  // at its start; before, a sample of several segments found "no text to train on" and one
  // whole-file sentence (longer than sentencepiece's max_sentence_length) failed training. The
  // dataset decodes back to the text exactly.
  void oneLineCorpusPreparesWithBpe() {
    std::string text = one_line_real_corpus();
    QVERIFY2(text.size() > 200000, "the test corpus is too small");
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), 0);
    // A one-line text without any space (Chinese, base64): cut at UTF-8 boundaries. "\u00e9" is
    // two bytes, "\u4e2d" three: a cut inside one would be invalid UTF-8 for sentencepiece.
    std::string nospace;
    const char* syllables[] = {"ka", "\u00e9t", "\u4e2d", "\u6587", "zu", "mi", "\u00fcb", "ro", "\u65e5", "na", "to", "se"};
    for (uint64_t x = 7; nospace.size() < 60000;) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      nospace += syllables[(x >> 33) % 12];
    }
    write_file(p("one/line.txt"), text);
    write_file(p("one/nospace.txt"), nospace);
    struct Case { std::string in; uint64_t sample; };
    // sample 300000 < corpus: 4 segments, 3 inside the line; 100 MB > corpus: the whole file
    for (const Case& c : {Case{p("one/line.txt"), 300000}, Case{p("one/line.txt"), 100'000'000},
                          Case{p("one/nospace.txt"), 100'000'000}}) {
      const std::string out = p("one_ds_" + std::to_string(c.sample) + fs::path(c.in).stem().string());
      td::PrepareOptions o = opts({c.in}, out);
      o.tokenizer = "bpe";
      o.vocab_size = 400;
      o.val_fraction = 0;
      o.bpe_sample_bytes = c.sample;
      try {
        td::prepare_dataset(o);
      } catch (const td::Error& e) {
        QFAIL(qPrintable(QString("prepare of %1 (sample %2) failed: %3").arg(QString::fromStdString(c.in)).arg(c.sample).arg(e.what())));
      }
      auto tok = td::Tokenizer::load(out);
      QCOMPARE(tok->vocab_size(), 400);
      std::vector<uint32_t> all = tdtest::read_split(out, "train");
      QVERIFY(!all.empty());
      QCOMPARE(all.back(), uint32_t(tok->eot_id()));
      all.pop_back();
      const std::string& want = c.in == p("one/line.txt") ? text : nospace;
      QVERIFY(all.size() < want.size() * 2 / 3);  // merges were learnt from the one line
      QVERIFY2(tok->decode(all) == want, "the encoded one-line corpus does not decode back to it");
    }
  }

  // Issue 35: a one-line corpus of 2.5 MB (three units of about 1 MiB) with --val-fraction 0.1
  // got no validation split at all: the unit that straddles the split byte is now cut there. The
  // split byte is 2.5 MB - round(0.1 x 2.5 MB); the train tokens decode to the text before it.
  void oneLineCorpusSplitsAtItsValFraction() {
    const std::string real = one_line_real_corpus();
    QVERIFY2(real.size() > 100000, "the test corpus is too small");
    std::string text;
    while (text.size() < 2'500'000) text += real;
    text.resize(2'500'000);
    write_file(p("oneval/line.txt"), text);
    const std::string out = p("oneval_ds");
    td::PrepareOptions o = opts({p("oneval/line.txt")}, out);
    o.tokenizer = "bpe";
    o.vocab_size = 400;
    o.val_fraction = 0.1;
    const td::PrepareResult r = td::prepare_dataset(o);
    QVERIFY(r.val_tokens > 0);
    const double got = double(r.val_tokens) / double(r.train_tokens + r.val_tokens);
    QVERIFY2(std::fabs(got - 0.1) < 0.01, qPrintable(QString("val share %1").arg(got)));
    QVERIFY(r.warnings.empty());
    auto tok = td::Tokenizer::load(out);
    std::vector<uint32_t> train = tdtest::read_split(out, "train"), val = tdtest::read_split(out, "val");
    QCOMPARE(val.back(), uint32_t(tok->eot_id()));
    val.pop_back();
    const size_t split = text.size() - size_t(std::llround(0.1 * double(text.size())));
    std::vector<uint32_t> all = train;
    all.insert(all.end(), val.begin(), val.end());
    QVERIFY2(tok->decode(all) == text, "train + val do not decode back to the corpus");
    QCOMPARE(tok->decode(train).size(), split);
  }

  // Real text with both tokenizers: every token decodes back to the sources, in order.
  void realCorpusBothTokenizers() {
    std::string corpus = tdtest::real_corpus();
    qInfo("real corpus: %s", corpus.c_str());
    for (std::string kind : {"byte", "bpe"}) {
      td::PrepareOptions o = opts({corpus}, p("real_" + kind));
      o.tokenizer = kind;
      if (kind == "bpe") {
        o.vocab_size = 500;
        o.bpe_sample_bytes = 300000;  // a bounded sample keeps training fast
      }
      td::PrepareResult r = td::prepare_dataset(o);
      auto m = tdtest::read_manifest(o.out_dir);
      std::string text;
      uint64_t docs = 0;
      std::vector<uint64_t> doc_end;  // input offset after each document
      for (auto& s : m["sources"]) {
        std::ifstream in(s["path"].get<std::string>(), std::ios::binary);
        text += std::string((std::istreambuf_iterator<char>(in)), {});
        doc_end.push_back(text.size());
        ++docs;
      }
      QCOMPARE(r.bytes_read, uint64_t(text.size()));
      if (corpus.find("fortunes") != std::string::npos) {
        QVERIFY(m["skipped"].size() > 0);  // .dat index files and .u8 links
        for (auto& s : m["skipped"]) {
          std::string path = s["path"], reason = s["reason"];
          if (path.size() > 4 && path.substr(path.size() - 4) == ".dat")
            QVERIFY2(reason.find("binary") != std::string::npos, path.c_str());
        }
      }
      auto tok = td::Tokenizer::load(o.out_dir);
      std::vector<uint32_t> all = cat(tdtest::read_split(o.out_dir, "train"), tdtest::read_split(o.out_dir, "val"));
      QCOMPARE(uint64_t(all.size()), r.train_tokens + r.val_tokens);
      QCOMPARE(uint64_t(std::count(all.begin(), all.end(), uint32_t(tok->eot_id()))), docs);
      if (kind == "byte") {
        QCOMPARE(r.train_tokens + r.val_tokens, uint64_t(text.size() + docs));
        // val is the last round(10%) of the input bytes + the eot of each document ending there
        uint64_t val_bytes = uint64_t(std::llround(text.size() * 0.1));
        uint64_t split = text.size() - val_bytes;
        uint64_t val_docs = std::count_if(doc_end.begin(), doc_end.end(), [&](uint64_t e) { return e > split; });
        QCOMPARE(r.val_tokens, val_bytes + val_docs);
      } else {
        QCOMPARE(tok->vocab_size(), 500);
        qInfo("bpe: %llu tokens for %zu bytes", (unsigned long long)(r.train_tokens + r.val_tokens), text.size());
        QVERIFY(r.train_tokens + r.val_tokens < text.size() * 2 / 3);  // BPE compresses
        std::vector<uint32_t> no_eot;
        for (uint32_t t : all)
          if (t != uint32_t(tok->eot_id())) no_eot.push_back(t);
        QVERIFY(tok->decode(no_eot) == text);
        // prepare's ids (encoded by words through a cache, on threads) are Tokenizer::encode's
        // (line by line, uncached) for the whole first document
        std::vector<uint32_t> enc = tok->encode(text.substr(0, doc_end[0]));
        QVERIFY(all.size() > enc.size());
        QVERIFY(std::equal(enc.begin(), enc.end(), all.begin()));
        QCOMPARE(all[enc.size()], uint32_t(tok->eot_id()));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestPrepare)
#include "test_prepare.moc"
