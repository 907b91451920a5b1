// Tokenizers: the byte tokenizer and sentencepiece BPE models (see tokenizer.h).
#include "engine/tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/data/manifest.h"

namespace td {

namespace {

// The UTF-8 sequence at p[0, n) (n >= 1): its length 1..4 when it is one valid character (no
// overlong, no surrogate, <= U+10FFFF), 0 when it is invalid, -1 when it is a correct prefix of
// one cut by the end of the buffer. *cp gets the code point when valid.
int utf8_sequence(const unsigned char* p, size_t n, uint32_t* cp_out = nullptr) {
  unsigned char c = p[0];
  if (c < 0x80) {
    if (cp_out) *cp_out = c;
    return 1;
  }
  int len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;  // continuation byte, overlong lead (C0/C1) or > F4
  if (static_cast<size_t>(len) > n) {
    // Cut by the end of the buffer: a correct prefix if what is there are continuation bytes.
    for (size_t k = 1; k < n; ++k)
      if ((p[k] & 0xC0) != 0x80) return 0;
    return -1;
  }
  for (int k = 1; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  if (cp_out) *cp_out = cp;
  return len;
}

}  // namespace

size_t utf8_invalid_offset(const char* s, size_t n, bool allow_truncated_tail) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s);
  size_t i = 0;
  while (i < n) {
    // ASCII fast path: 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    int len = utf8_sequence(p + i, n - i);
    if (len > 0) { i += static_cast<size_t>(len); continue; }
    return len < 0 && allow_truncated_tail ? n : i;
  }
  return n;
}

std::string terminal_safe(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  std::string out;
  out.reserve(n);
  auto escape = [&](unsigned char b) {
    out += "\\x";
    out += hex[b >> 4];
    out += hex[b & 15];
  };
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    int len = utf8_sequence(p + i, n - i, &cp);
    if (len <= 0) {  // invalid or cut: this byte alone, then resynchronise at the next one
      escape(p[i++]);
      continue;
    }
    // C0 controls but "\n" and "\t", DEL, and the C1 controls U+0080..U+009F (CSI is U+009B)
    const bool control = (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7F && cp <= 0x9F);
    for (int k = 0; k < len; ++k) {
      if (control) escape(p[i + k]);
      else out += static_cast<char>(p[i + k]);
    }
    i += static_cast<size_t>(len);
  }
  return out;
}

namespace {

// Calls f(word) for each word of a line: a word starts at the line's start and at every space
// that follows a non-space (runs of spaces stay with the word after them, as sentencepiece's
// trainer splits text with allow_whitespace_only_pieces).
template <class F>
void for_each_word(std::string_view line, F&& f) {
  size_t start = 0;
  for (size_t i = 1; i < line.size(); ++i)
    if (line[i] == ' ' && line[i - 1] != ' ') {
      f(line.substr(start, i - start));
      start = i;
    }
  if (start < line.size()) f(line.substr(start));
}

void sp_encode_ids(const sentencepiece::SentencePieceProcessor& sp, std::string_view s,
                   std::vector<int>& ids, const std::string& what) {
  auto st = sp.Encode(s, &ids);
  if (!st.ok()) fail(what + ": sentencepiece could not encode the text: " + st.ToString());
}

}  // namespace

bool sp_words_independent(const sentencepiece::SentencePieceProcessor& sp) {
  const std::string ws = "\xe2\x96\x81";  // U+2581, sentencepiece's space
  int nl = sp.PieceToId("<0x0A>");
  if (nl == sp.unk_id() || !sp.IsByte(nl)) return false;
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    if (sp.IsControl(i) || sp.IsUnknown(i) || sp.IsByte(i)) continue;
    const std::string& p = sp.IdToPiece(i);
    bool seen_other = false;
    for (size_t k = 0; k < p.size();) {
      if (p.compare(k, 3, ws) == 0) {
        if (seen_other) return false;
        k += 3;
      } else {
        seen_other = true;
        ++k;
      }
    }
  }
  const char* probes[] = {"a b", "a  b", " a", "a ", "  ", "hello world, the end.",
                          "x\ty  z   w", "The quick brown fox", "don't  stop"};
  std::vector<int> whole, part, parts;
  for (const char* probe : probes) {
    std::string_view s(probe);
    sp_encode_ids(sp, s, whole, "probe");
    parts.clear();
    for_each_word(s, [&](std::string_view w) {
      sp_encode_ids(sp, w, part, "probe");
      parts.insert(parts.end(), part.begin(), part.end());
    });
    if (parts != whole) return false;
  }
  return true;
}

void sp_encode_append(const sentencepiece::SentencePieceProcessor& sp, int newline_id,
                      std::string_view text, std::vector<uint32_t>& out, const std::string& what,
                      uint64_t offset_base, SpWordCache* cache) {
  size_t bad = utf8_invalid_offset(text.data(), text.size());
  if (bad != text.size())
    fail(what + ": invalid UTF-8 at byte " + std::to_string(offset_base + bad) +
         "; the bpe tokenizer needs UTF-8 text: convert the file (iconv -f latin1 -t utf-8) or "
         "leave it out");
  thread_local std::vector<int> ids;  // reused: one encode call per line
  auto encode = [&](std::string_view line) {
    if (line.empty()) return;
    if (!cache) {
      sp_encode_ids(sp, line, ids, what);
      for (int id : ids) out.push_back(static_cast<uint32_t>(id));
      return;
    }
    for_each_word(line, [&](std::string_view w) {
      auto it = cache->words.find(w);
      if (it != cache->words.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
      sp_encode_ids(sp, w, ids, what);
      size_t at = out.size();
      for (int id : ids) out.push_back(static_cast<uint32_t>(id));
      if (w.size() <= 64) {  // long "words" (URLs, base64) would only fill the cache
        if (cache->words.size() >= cache->max_entries) cache->words.clear();
        cache->words.emplace(std::string(w), std::vector<uint32_t>(out.begin() + at, out.end()));
      }
    });
  };
  if (newline_id < 0) {  // a model without byte pieces: let sentencepiece see the newlines
    encode(text);
    return;
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      encode(text.substr(start));
      break;
    }
    encode(text.substr(start, nl - start));
    out.push_back(static_cast<uint32_t>(newline_id));
    start = nl + 1;
  }
}

namespace {

class ByteTokenizer final : public Tokenizer {
 public:
  std::string kind() const override { return "byte"; }
  int vocab_size() const override { return 257; }
  int eot_id() const override { return 256; }
  std::vector<uint32_t> encode(std::string_view text) const override {
    std::vector<uint32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }
  std::string decode(const std::vector<uint32_t>& ids) const override {
    std::string s;
    s.reserve(ids.size());
    for (uint32_t id : ids) {
      if (id < 256) s.push_back(static_cast<char>(id));
      else if (id == 256) s += "<|endoftext|>";
      else fail("byte tokenizer: id " + std::to_string(id) + " is outside the vocabulary (0..256)");
    }
    return s;
  }
};

class SpTokenizer final : public Tokenizer {
 public:
  explicit SpTokenizer(const std::string& path) {
    auto st = sp_.Load(path);
    if (!st.ok())
      fail("cannot load the sentencepiece model '" + path + "': " + st.ToString() +
           "; delete the dataset directory and prepare it again");
    int nl = sp_.PieceToId("<0x0A>");
    newline_id_ = (nl != sp_.unk_id() && sp_.IsByte(nl)) ? nl : -1;
  }
  std::string kind() const override { return "bpe"; }
  int vocab_size() const override { return sp_.GetPieceSize(); }
  int eot_id() const override { return sp_.eos_id(); }
  std::vector<uint32_t> encode(std::string_view text) const override {
    std::vector<uint32_t> out;
    sp_encode_append(sp_, newline_id_, text, out);
    return out;
  }
  std::string decode(const std::vector<uint32_t>& ids) const override {
    std::vector<int> v;
    v.reserve(ids.size());
    for (uint32_t id : ids) {
      if (id >= static_cast<uint32_t>(sp_.GetPieceSize()))
        fail("bpe tokenizer: id " + std::to_string(id) + " is outside the vocabulary (0.." +
             std::to_string(sp_.GetPieceSize() - 1) + ")");
      v.push_back(static_cast<int>(id));
    }
    std::string s;
    auto st = sp_.Decode(v, &s);
    if (!st.ok()) fail("bpe tokenizer: cannot decode: " + st.ToString());
    return s;
  }

 private:
  sentencepiece::SentencePieceProcessor sp_;
  int newline_id_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::byte() { return std::make_unique<ByteTokenizer>(); }

std::unique_ptr<Tokenizer> Tokenizer::sentencepiece(const std::string& model_path) {
  return std::make_unique<SpTokenizer>(model_path);
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dataset_dir) {
  namespace fs = std::filesystem;
  const DatasetManifest m = read_dataset_manifest(dataset_dir);
  if (m.tokenizer_kind == "byte") return byte();
  fs::path p = fs::path(dataset_dir) / m.model_file;
  if (!fs::exists(p))
    fail("the dataset '" + dataset_dir + "' has no tokenizer file '" + m.model_file +
         "': delete the dataset directory and prepare it again");
  return sentencepiece(p.string());
}

}  // namespace td
