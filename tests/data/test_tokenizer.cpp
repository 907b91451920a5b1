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

  // terminal_safe: hand-made byte strings, each expected output written out by hand.
  void terminalSafe() {
    using td::terminal_safe;
    auto S = [](const char* s, size_t n) { return std::string(s, n); };
    // valid text, multi-byte characters, "\n" and "\t" are unchanged
    const std::string valid = "ROMEO: caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80\tend\n";
    QCOMPARE(terminal_safe(valid), valid);
    QCOMPARE(terminal_safe(""), std::string());
    QCOMPARE(terminal_safe("a\\x41"), std::string("a\\x41"));  // backslashes are kept as they are
    // ESC sequences (colour, clear screen, OSC title), carriage return, bell, NUL, DEL
    QCOMPARE(terminal_safe("\x1b[31mred\x1b[0m"), std::string("\\x1b[31mred\\x1b[0m"));
    QCOMPARE(terminal_safe("\x1b]0;owned\x07"), std::string("\\x1b]0;owned\\x07"));
    QCOMPARE(terminal_safe(S("a\rb\0c\x7f", 6)), std::string("a\\x0db\\x00c\\x7f"));
    // the C1 controls are valid UTF-8 (U+009B, CSI; U+0085, NEL) but escaped byte by byte
    QCOMPARE(terminal_safe("\xc2\x9b" "2J"), std::string("\\xc2\\x9b2J"));
    QCOMPARE(terminal_safe("\xc2\x85"), std::string("\\xc2\\x85"));
    QCOMPARE(terminal_safe("\xc2\xa0"), std::string("\xc2\xa0"));  // U+00A0 is text
    // lone continuation bytes, a lead byte cut short (then resynchronised), bytes never valid
    QCOMPARE(terminal_safe("\x80\xbf" "x"), std::string("\\x80\\xbfx"));
    QCOMPARE(terminal_safe("\xe2\x82" "A"), std::string("\\xe2\\x82" "A"));
    QCOMPARE(terminal_safe("end\xe2\x82"), std::string("end\\xe2\\x82"));  // cut by the end
    QCOMPARE(terminal_safe("\xff\xfe\xf5"), std::string("\\xff\\xfe\\xf5"));
    // overlong encodings ("/" as C0 AF and E0 80 AF, NUL as C0 80), a surrogate, > U+10FFFF
    QCOMPARE(terminal_safe("\xc0\xaf"), std::string("\\xc0\\xaf"));
    QCOMPARE(terminal_safe("\xe0\x80\xaf"), std::string("\\xe0\\x80\\xaf"));
    QCOMPARE(terminal_safe("\xc0\x80"), std::string("\\xc0\\x80"));
    QCOMPARE(terminal_safe("\xed\xa0\x80"), std::string("\\xed\\xa0\\x80"));
    QCOMPARE(terminal_safe("\xf4\x90\x80\x80"), std::string("\\xf4\\x90\\x80\\x80"));
    QCOMPARE(terminal_safe("\xf4\x8f\xbf\xbf"), std::string("\xf4\x8f\xbf\xbf"));  // U+10FFFF
    // a valid character right after an invalid byte is kept
    QCOMPARE(terminal_safe("\xff\xc3\xa9"), std::string("\\xff\xc3\xa9"));
    // every output is valid UTF-8 without control bytes but "\n" and "\t", for all 2-byte inputs
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b) {
        const char in[2] = {static_cast<char>(a), static_cast<char>(b)};
        const std::string out = terminal_safe(std::string(in, 2));
        QVERIFY(td::utf8_invalid_offset(out.data(), out.size()) == out.size());
        for (unsigned char c : out) QVERIFY(c >= 0x20 ? c != 0x7f : (c == '\n' || c == '\t'));
      }
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
