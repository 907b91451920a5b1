// Tokenizers: text <-> token ids.
//
//   byte: the 256 byte values are ids 0..255, <|endoftext|> is 256 (vocab 257).
//   bpe:  a sentencepiece BPE model (the library trains and encodes it; byte_fallback on, so any
//         valid UTF-8 encodes); the end-of-text token is sentencepiece's </s> (eos id).
//
// A dataset directory holds the tokenizer next to its shards (tokenizer.model for bpe; the
// byte tokenizer needs no file). Tokenizer::load(dir, manifest) reopens it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace td {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// "byte" or "bpe".
  virtual std::string kind() const = 0;
  /// Number of token ids (every id is < vocab_size()).
  virtual int vocab_size() const = 0;
  /// The id that separates documents (<|endoftext|> / </s>).
  virtual int eot_id() const = 0;
  /// Encodes text (no end-of-text appended). Throws td::Error on invalid UTF-8 (bpe only).
  virtual std::vector<uint32_t> encode(std::string_view text) const = 0;
  /// Decodes ids to text; the end-of-text id decodes to "<|endoftext|>" (byte) or "" (bpe).
  virtual std::string decode(const std::vector<uint32_t>& ids) const = 0;

  /// Reopens the tokenizer of a prepared dataset directory (reads <dir>/manifest.json).
  /// Throws td::Error when the directory holds no dataset or its tokenizer file is missing.
  static std::unique_ptr<Tokenizer> load(const std::string& dataset_dir);
  /// The byte tokenizer (vocab 257).
  static std::unique_ptr<Tokenizer> byte();
  /// A sentencepiece model from its file. Throws td::Error when the file is not one.
  static std::unique_ptr<Tokenizer> sentencepiece(const std::string& model_path);
};

/// A cache of word encodings for sp_encode_append; one per thread (not thread-safe). Bounded:
/// cleared when it holds max_entries words (~100 bytes each).
struct SpWordCache {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<uint32_t>, Hash, std::equal_to<>> words;
  size_t max_entries = size_t(1) << 17;
};

/// BPE encoding as prepare and the bpe Tokenizer::encode do it (so both give the same ids):
/// each line of `text` is encoded by sentencepiece on its own and every "\n" becomes
/// `newline_id` (the byte-fallback piece <0x0A>). Appends the ids to `out`. Thread-safe (sp is
/// only read). Throws td::Error on invalid UTF-8 ("invalid UTF-8 at byte N"); `what` names the
/// text in that message (a file path, "text").
/// With a cache (only for a model where sp_words_independent() is true), each word — a run of
/// spaces and the non-space characters after it — is encoded once and then looked up: the ids
/// are the same, since no piece of such a model spans a word boundary.
void sp_encode_append(const sentencepiece::SentencePieceProcessor& sp, int newline_id,
                      std::string_view text, std::vector<uint32_t>& out,
                      const std::string& what = "text", uint64_t offset_base = 0,
                      SpWordCache* cache = nullptr);

/// Whether a line's encoding is the concatenation of its words' encodings, so SpWordCache is
/// exact: the model has byte pieces, no piece holds "▁" (a space) after another character
/// (split_by_whitespace, spaces as prefixes), and probe lines encode the same whole and by
/// words (no dummy prefix, no whitespace folding). True for the models prepare trains.
bool sp_words_independent(const sentencepiece::SentencePieceProcessor& sp);

/// Byte offset of the first invalid UTF-8 sequence in [p, p+n), or n if it is all valid.
/// When allow_truncated_tail, a multi-byte sequence cut by the end of the buffer is valid
/// (for sniffing the first few KB of a file). Rejects overlongs, surrogates, > U+10FFFF.
size_t utf8_invalid_offset(const char* p, size_t n, bool allow_truncated_tail = false);

/// `text` made safe to print on a terminal: every byte of an invalid UTF-8 sequence (a lone
/// continuation byte, an overlong or surrogate encoding, a sequence cut short, > U+10FFFF) and
/// of a control character other than "\n" and "\t" (C0, DEL, the C1 controls U+0080..U+009F:
/// ESC and CSI sequences) becomes "\xNN" (two lowercase hex digits); valid text, multi-byte
/// characters included, is unchanged. Backslashes are not escaped (it is for reading, not for
/// parsing back). Used for model output on a terminal (docs/guide.md "Samples on a terminal").
std::string terminal_safe(std::string_view text);

}  // namespace td
