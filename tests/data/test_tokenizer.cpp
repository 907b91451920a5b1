// Tokenizers: byte values by hand; a small sentencepiece BPE model trained through prepare
// round-trips text; invalid UTF-8 is an error for bpe.
#include <QTemporaryDir>
#include <QtTest>

#include <sentencepiece_processor.h>

#include "data_test_util.h"
#include "engine/common/error.h"
#include "engine/data/prepare.h"
#include "engine/tokenizer/tokenizer.h"

class TestTokenizer : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir tmp_;
  std::unique_ptr<td::Tokenizer> bpe_;

 private slots:
  void initTestCase() {
    // A generated corpus with repeated words, so BPE has merges to learn.
    std::string text;
    const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "héllo", "naïve"};
    uint64_t s = 1;
    for (int line = 0; line < 4000; ++line) {
      for (int w = 0; w < 8; ++w) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        text += words[(s >> 33) % 10];
        text += w == 7 ? "\n" : " ";
      }
    }
    std::string dir = tmp_.path().toStdString();
    tdtest::write_file(dir + "/gen/corpus.txt", text);
    td::PrepareOptions o;
    o.inputs = {dir + "/gen"};
    o.out_dir = dir + "/ds";
    o.tokenizer = "bpe";
    o.vocab_size = 350;
    o.quiet = true;
    td::prepare_dataset(o);
    bpe_ = td::Tokenizer::load(dir + "/ds");
  }

  void byteValues() {
    auto t = td::Tokenizer::byte();
    QCOMPARE(t->kind(), std::string("byte"));
    QCOMPARE(t->vocab_size(), 257);
    QCOMPARE(t->eot_id(), 256);
    QVERIFY(t->encode("hi") == (std::vector<uint32_t>{104, 105}));
    QVERIFY(t->encode("é") == (std::vector<uint32_t>{0xC3, 0xA9}));
    QVERIFY(t->encode(std::string("\0\xff", 2)) == (std::vector<uint32_t>{0, 255}));
    QCOMPARE(t->decode({104, 105, 256, 10}), std::string("hi<|endoftext|>\n"));
    QVERIFY_THROWS_EXCEPTION(td::Error, t->decode({257}));
  }

  void bpeModel() {
    QCOMPARE(bpe_->kind(), std::string("bpe"));
    QCOMPARE(bpe_->vocab_size(), 350);
    QCOMPARE(bpe_->eot_id(), 2);  // sentencepiece's </s>
    // "the quick" is seen thousands of times: fewer tokens than its 9 bytes
    QVERIFY(bpe_->encode("the quick").size() < 5);
    QCOMPARE(bpe_->decode({uint32_t(bpe_->eot_id())}), std::string(""));
  }

  void bpeRoundTrip() {
    // Unseen characters go through byte fallback; spaces and newlines are kept exactly.
    const std::string texts[] = {"the lazy dog\n", "  two  spaces\n\nand a blank line",
                                 "Zürich 東京 🙂 tab\there", "\n\n", ""};
    for (const std::string& s : texts) {
      std::vector<uint32_t> ids = bpe_->encode(s);
      for (uint32_t id : ids) QVERIFY(id < 350u);
      QCOMPARE(bpe_->decode(ids), s);
    }
  }

  void bpeInvalidUtf8() {
    const std::string bad[] = {"ab\xff", "\xc3", "\xed\xa0\x80" /* surrogate */, "\xc0\xaf" /* overlong */};
    for (const std::string& s : bad) {
      try {
        bpe_->encode(s);
        QFAIL("invalid UTF-8 was encoded");
      } catch (const td::Error& e) {
        QVERIFY2(std::string(e.what()).find("invalid UTF-8") != std::string::npos, e.what());
      }
    }
    QCOMPARE(td::utf8_invalid_offset("ab\xff", 3), size_t(2));
    QCOMPARE(td::utf8_invalid_offset("ab\xe2\x82", 4, true), size_t(4));  // cut at the end: ok
    QCOMPARE(td::utf8_invalid_offset("ab\xe2\x82", 4, false), size_t(2));
    QCOMPARE(td::utf8_invalid_offset("\xf4\x90\x80\x80", 4), size_t(0));  // > U+10FFFF
  }

  // prepare's models let the word cache be exact; the cached ids equal the uncached ones.
  void wordCacheIsExact() {
    sentencepiece::SentencePieceProcessor sp;
    QVERIFY(sp.Load(tmp_.path().toStdString() + "/ds/tokenizer.model").ok());
    QVERIFY(td::sp_words_independent(sp));
    const int nl = sp.PieceToId("<0x0A>");
    const std::string text = "the  quick brown\n   fox jumps over the lazy dog\nnaïve héllo 東京  \n"
                             "the quick brown fox jumps\n";
    td::SpWordCache cache;
    std::vector<uint32_t> plain, cached, again;
    td::sp_encode_append(sp, nl, text, plain);
    td::sp_encode_append(sp, nl, text, cached, "text", 0, &cache);
    QVERIFY(cache.words.size() > 5);
    td::sp_encode_append(sp, nl, text, again, "text", 0, &cache);  // now from the cache
    QVERIFY(plain == cached);
    QVERIFY(plain == again);
    QVERIFY(plain == bpe_->encode(text));
  }

  void loadErrors() {
    QVERIFY_THROWS_EXCEPTION(td::Error, td::Tokenizer::load(tmp_.path().toStdString() + "/none"));
    tdtest::write_file(tmp_.path().toStdString() + "/junk.model", "not a model");
    QVERIFY_THROWS_EXCEPTION(td::Error, td::Tokenizer::sentencepiece(tmp_.path().toStdString() + "/junk.model"));
  }
};

QTEST_APPLESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
