// traindeck-engine prepare: text files -> token shards + manifest.json (prepare.h,
// docs/formats.md). One pass streams the corpus; bpe first trains sentencepiece on a sample.
#include "engine/data/prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/data/corpus.h"
#include "engine/data/reader.h"
#include "engine/data/shard.h"
#include "engine/tokenizer/tokenizer.h"

namespace td {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string hex32(uint32_t v) {
  char b[9];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

// ---- output: token stream -> train shards, then val shards ----------------------------------

// Shards of one split: <dir>/<split>_NNNNNN.bin, each at most shard_tokens tokens.
class SplitWriter {
 public:
  SplitWriter(std::string dir, std::string split, int width, uint64_t shard_tokens)
      : dir_(std::move(dir)), split_(std::move(split)), width_(width), shard_tokens_(shard_tokens) {}

  void write(const uint32_t* t, size_t n) {
    while (n > 0) {
      if (!cur_) {
        char name[64];
        std::snprintf(name, sizeof name, "%s_%06zu.bin", split_.c_str(), shards_.size());
        names_.push_back(name);
        cur_ = std::make_unique<ShardWriter>((fs::path(dir_) / name).string(), width_);
      }
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, shard_tokens_ - cur_->count()));
      cur_->write(t, k);
      t += k;
      n -= k;
      tokens_ += k;
      if (cur_->count() == shard_tokens_) close();
    }
  }
  void close() {
    if (!cur_) return;
    cur_->finish();
    ShardInfo info = read_shard_header((fs::path(dir_) / names_.back()).string());
    shards_.push_back({{"file", names_.back()}, {"tokens", info.count}, {"crc32", hex32(info.crc32)}});
    cur_.reset();
  }
  uint64_t tokens() const { return tokens_; }
  json shards() const { return shards_; }

 private:
  std::string dir_, split_;
  int width_;
  uint64_t shard_tokens_;
  std::unique_ptr<ShardWriter> cur_;
  std::vector<std::string> names_;
  json shards_ = json::array();
  uint64_t tokens_ = 0;
};

// The token stream in input order: tokens of units that start before split_byte go to train,
// the rest to val (an end-of-text token goes with the unit before it).
class Output {
 public:
  Output(const std::string& dir, int width, uint64_t shard_tokens, uint64_t split_byte)
      : train_(dir, "train", width, shard_tokens), val_(dir, "val", width, shard_tokens),
        split_byte_(split_byte) {}
  /// Called at the start of each unit with its global input offset (bytes).
  void route(uint64_t global_off) {
    if (!in_val_ && global_off >= split_byte_) {
      train_.close();
      in_val_ = true;
    }
  }
  /// Tokens of a byte run starting at global_off: split exactly at split_byte.
  void bytes_run(const uint32_t* t, size_t n, uint64_t global_off) {
    if (!in_val_ && global_off + n > split_byte_) {
      size_t k = global_off >= split_byte_ ? 0 : static_cast<size_t>(split_byte_ - global_off);
      write(t, k);
      route(split_byte_);
      t += k;
      n -= k;
    }
    write(t, n);
  }
  void write(const uint32_t* t, size_t n) { (in_val_ ? val_ : train_).write(t, n); }
  void finish() { train_.close(); val_.close(); }
  /// The input offset (bytes) where val begins.
  uint64_t split_byte() const { return split_byte_; }
  SplitWriter& train() { return train_; }
  SplitWriter& val() { return val_; }

 private:
  SplitWriter train_, val_;
  uint64_t split_byte_;
  bool in_val_ = false;
};

// Progress line on stderr (\r-updated, at most 4 times a second) and the caller's callback.
class Progress {
 public:
  // print: draw the line on stderr (prepare_dataset: not quiet and no callback given)
  Progress(bool print, uint64_t total, const std::function<void(uint64_t, uint64_t)>& cb)
      : quiet_(!print), total_(total), cb_(cb), t0_(Clock::now()), last_(t0_) {}
  void add(uint64_t n) {
    done_ += n;
    if (n < 65536 && ++calls_ % 64 != 0) return;  // per line: read the clock now and then
    auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    emit(false);
  }
  void end() { emit(true); }

 private:
  void emit(bool final) {
    if (cb_) cb_(done_, total_);
    if (quiet_) return;
    double s = std::max(1e-9, seconds_since(t0_));
    std::fprintf(stderr, "\rprepare: %5.1f%%  %.1f / %.1f MB  %.1f MB/s%s",
                 total_ ? 100.0 * done_ / total_ : 100.0, done_ / 1e6, total_ / 1e6,
                 done_ / 1e6 / s, final ? "\n" : "");
    std::fflush(stderr);
  }
  bool quiet_;
  uint64_t total_, done_ = 0, calls_ = 0;
  const std::function<void(uint64_t, uint64_t)>& cb_;
  Clock::time_point t0_, last_;
};

// ---- bpe: parallel, order-keeping encoder -------------------------------------------------

// A unit is encoded alone: a line of a text file (with its "\n") or a JSONL document.
struct Unit {
  uint32_t src = 0;       // index into the corpus files (for error messages)
  uint32_t off = 0, len = 0;  // in Job::text
  uint64_t file_off = 0;  // byte offset in its file
  uint64_t global_off = 0;
  bool eot = false;       // end of document: append the end-of-text token
};

struct Job {
  std::string text;
  std::vector<Unit> units;
  std::vector<uint32_t> tokens;  // result: all units' ids in order
  std::vector<uint32_t> counts;  // result: ids per unit
  std::exception_ptr err;
  bool done = false;
};

class EncodePool {
 public:
  EncodePool(const sentencepiece::SentencePieceProcessor& sp, int newline_id, int eot,
             const std::vector<SourceFile>& files, int threads)
      : sp_(sp), newline_id_(newline_id), eot_(eot), files_(files),
        max_in_flight_(static_cast<size_t>(2 * threads + 1)), use_cache_(sp_words_independent(sp)) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ~EncodePool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
      queue_.clear();  // on an error, queued jobs are dropped
    }
    cv_work_.notify_all();
    for (auto& t : workers_) t.join();
  }
  /// Queues a job; when too many are in flight, first hands the oldest finished one to consume.
  template <class F>
  void submit(std::unique_ptr<Job> job, F&& consume) {
    if (order_.size() >= max_in_flight_) pop(consume);
    Job* j = job.get();
    order_.push_back(std::move(job));
    {
      std::lock_guard<std::mutex> g(m_);
      queue_.push_back(j);
    }
    cv_work_.notify_one();
  }
  template <class F>
  void drain(F&& consume) {
    while (!order_.empty()) pop(consume);
  }

 private:
  template <class F>
  void pop(F&& consume) {
    std::unique_ptr<Job> j = std::move(order_.front());
    order_.pop_front();
    {
      std::unique_lock<std::mutex> l(m_);
      cv_done_.wait(l, [&] { return j->done; });
    }
    if (j->err) std::rethrow_exception(j->err);
    consume(*j);
  }
  void run() {
    SpWordCache cache;  // per thread: words repeat, so most are looked up, not encoded
    for (;;) {
      Job* j;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_work_.wait(l, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        j = queue_.front();
        queue_.pop_front();
      }
      try {
        j->tokens.reserve(j->text.size() / 3 + j->units.size());
        for (const Unit& u : j->units) {
          size_t before = j->tokens.size();
          sp_encode_append(sp_, newline_id_, std::string_view(j->text).substr(u.off, u.len),
                           j->tokens, files_[u.src].path, u.file_off, use_cache_ ? &cache : nullptr);
          if (u.eot) j->tokens.push_back(static_cast<uint32_t>(eot_));
          j->counts.push_back(static_cast<uint32_t>(j->tokens.size() - before));
        }
      } catch (...) {
        j->err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> g(m_);
        j->done = true;
      }
      cv_done_.notify_all();
    }
  }

  const sentencepiece::SentencePieceProcessor& sp_;
  int newline_id_, eot_;
  const std::vector<SourceFile>& files_;
  size_t max_in_flight_;
  bool use_cache_;
  std::deque<std::unique_ptr<Job>> order_;  // main thread only
  std::mutex m_;
  std::condition_variable cv_work_, cv_done_;
  std::deque<Job*> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

constexpr size_t kJobBytes = 1 << 20;        // text per encoding job

// ---- the encoding pass --------------------------------------------------------------------




// Byte tokenizer: ids are the bytes; each document ends with 256. Returns per-file crc32.
std::vector<uint32_t> encode_byte(const Corpus& c, Output& out, Progress& progress) {
  const size_t kChunk = 1 << 20;
  std::vector<char> buf(kChunk);
  std::vector<uint32_t> ids(kChunk);
  const uint32_t eot = 256;
  std::vector<uint32_t> crcs;
  uint64_t base = 0;
  std::string text;
  for (const SourceFile& f : c.files) {
    FileReader r(f);
    if (f.kind == SourceKind::text) {
      uint64_t off = 0;
      while (size_t n = r.read(buf.data(), kChunk)) {
        const unsigned char* p = reinterpret_cast<const unsigned char*>(buf.data());
        for (size_t i = 0; i < n; ++i) ids[i] = p[i];
        out.bytes_run(ids.data(), n, base + off);
        off += n;
        progress.add(n);
      }
      out.write(&eot, 1);
    } else {
      LineReader lr(r, f.path, kMaxJsonLine, false);
      std::string_view line;
      uint64_t off = 0, lineno = 0;
      while (lr.next(line, off)) {
        ++lineno;
        if (jsonl_text(line, f.path, "line " + std::to_string(lineno), text)) {
          out.route(base + off);
          if (ids.size() < text.size()) ids.resize(text.size());
          for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
          out.write(ids.data(), text.size());
          out.write(&eot, 1);
        }
        progress.add(line.size());
      }
    }
    crcs.push_back(r.crc());
    base += f.bytes;
  }
  return crcs;
}

// bpe: units (text lines, JSONL documents) batched into ~1 MB jobs, encoded on `threads`
// threads, written in input order. Returns per-file crc32.
std::vector<uint32_t> encode_bpe(const Corpus& c, Output& out, Progress& progress,
                                 const sentencepiece::SentencePieceProcessor& sp, int newline_id,
                                 int threads) {
  EncodePool pool(sp, newline_id, sp.eos_id(), c.files, threads);
  auto consume = [&](Job& j) {
    size_t pos = 0;
    for (size_t i = 0; i < j.units.size(); ++i) {
      out.route(j.units[i].global_off);
      out.write(j.tokens.data() + pos, j.counts[i]);
      pos += j.counts[i];
    }
  };
  auto job = std::make_unique<Job>();
  auto add = [&](uint32_t src, std::string_view text, uint64_t file_off, uint64_t global_off, bool eot) {
    if (!job->units.empty() && job->text.size() + text.size() > kJobBytes) {
      pool.submit(std::move(job), consume);
      job = std::make_unique<Job>();
      job->text.reserve(kJobBytes + kMaxTextLine);
    }
    job->units.push_back({src, static_cast<uint32_t>(job->text.size()), static_cast<uint32_t>(text.size()),
                          file_off, global_off, eot});
    job->text.append(text);
  };
  std::vector<uint32_t> crcs;
  uint64_t base = 0;
  std::string text;
  for (uint32_t fi = 0; fi < c.files.size(); ++fi) {
    const SourceFile& f = c.files[fi];
    FileReader r(f);
    bool jsonl = f.kind == SourceKind::jsonl;
    LineReader lr(r, f.path, jsonl ? kMaxJsonLine : kMaxTextLine, !jsonl);
    std::string_view line;
    uint64_t off = 0, lineno = 0;
    bool any = false;
    while (lr.next(line, off)) {
      if (jsonl) {
        ++lineno;
        if (jsonl_text(line, f.path, "line " + std::to_string(lineno), text))
          add(fi, text, off, base + off, true);
      } else {
        // A text unit that straddles the split point is cut there (at a UTF-8 character's start),
        // as the byte path splits exactly: a one-line corpus is cut into 1 MiB units, and a split
        // only between units would give a 2.5 MB one a val split of nothing.
        const uint64_t split = out.split_byte();
        size_t k = base + off < split && split < base + off + line.size() ? static_cast<size_t>(split - (base + off)) : 0;
        while (k > 0 && (static_cast<unsigned char>(line[k]) & 0xC0) == 0x80) --k;
        if (k > 0) {
          add(fi, line.substr(0, k), off, base + off, false);
          add(fi, line.substr(k), off + k, base + off + k, false);
        } else {
          add(fi, line, off, base + off, false);
        }
        any = true;
      }
      progress.add(line.size());
    }
    if (any) job->units.back().eot = true;  // the file's last line is still in `job`
    crcs.push_back(r.crc());
    base += f.bytes;
  }
  if (!job->units.empty()) pool.submit(std::move(job), consume);
  pool.drain(consume);
  return crcs;
}

// ---- bpe training on a bounded sample -------------------------------------------------------

// Training sentences are at most this long (sentencepiece skips sentences longer than its
// max_sentence_length, 16384 bytes below): longer lines are cut as encoding cuts them.
constexpr size_t kMaxSentence = 8192;

// Up to ~sample_bytes of text, taken from every file in proportion to its size (up to 16 evenly
// spaced segments per file), as training sentences (no "\n"). A segment inside a file starts
// after its first line break and ends at its last one (whole lines); a segment without line
// breaks (a one-line corpus: text8, minified text) starts and ends at a space, else at a
// character boundary. Lines longer than kMaxSentence are cut (long_line_cut).
std::vector<std::string> sample_sentences(const Corpus& c, uint64_t sample_bytes) {
  std::vector<std::string> out;
  std::string seg, text;
  for (const SourceFile& f : c.files) {
    uint64_t budget = c.total_bytes <= sample_bytes
                          ? f.bytes
                          : std::max<uint64_t>(4096, static_cast<uint64_t>(
                                static_cast<double>(f.bytes) * sample_bytes / c.total_bytes));
    budget = std::min(budget, f.bytes);
    uint64_t nseg = budget >= f.bytes ? 1 : std::clamp<uint64_t>(budget / (64 << 10), 1, 16);
    uint64_t seg_len = budget / nseg;
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_errno("cannot open input", f.path);
    for (uint64_t k = 0; k < nseg; ++k) {
      uint64_t at = nseg == 1 ? 0 : (f.bytes - seg_len) * k / (nseg - 1);
      seg.resize(seg_len);
      ssize_t got = ::pread(fd, seg.data(), seg_len, static_cast<off_t>(at));
      if (got < 0) { ::close(fd); fail_errno("cannot read input", f.path); }
      seg.resize(static_cast<size_t>(got));
      size_t a = 0, e = seg.size();
      const bool lines = seg.find('\n') != std::string::npos;
      if (at > 0 && !seg.empty()) {  // start after the first line break (a whole line)
        if (lines) {
          a = seg.find('\n') + 1;
        } else if ((a = seg.find(' ')) == std::string::npos) {  // at the first space, else
          a = 0;                                                   // after a cut character's rest
          while (a < seg.size() && (static_cast<unsigned char>(seg[a]) & 0xC0) == 0x80) ++a;
        }
      }
      if (at + seg.size() < f.bytes) {  // end at the last line break (else space or boundary)
        size_t nl = seg.rfind('\n');
        e = lines ? (nl < a ? a : nl + 1)
                  : seg.size() < 2 ? a : std::max(a, long_line_cut(seg.data(), seg.size() - 1));
      }
      std::string_view body(seg.data() + a, e - a);
      auto add_lines = [&](std::string_view t) {
        size_t s = 0;
        while (s < t.size()) {
          size_t nl = t.find('\n', s);
          if (nl == std::string_view::npos) nl = t.size();
          std::string_view line = t.substr(s, nl - s);
          while (line.size() > kMaxSentence) {
            size_t cut = long_line_cut(line.data(), kMaxSentence);
            out.emplace_back(line.substr(0, cut));
            line.remove_prefix(cut);
          }
          if (!line.empty()) out.emplace_back(line);
          s = nl + 1;
        }
      };
      if (f.kind == SourceKind::jsonl) {
        size_t s = 0;
        while (s < body.size()) {
          size_t nl = body.find('\n', s);
          if (nl == std::string_view::npos) nl = body.size();
          if (jsonl_text(body.substr(s, nl - s), f.path,
                         "line at byte " + std::to_string(at + a + s), text))
            add_lines(text);
          s = nl + 1;
        }
      } else {
        size_t bad = utf8_invalid_offset(body.data(), body.size());
        if (bad != body.size()) {
          ::close(fd);
          fail("input '" + f.path + "': invalid UTF-8 at byte " + std::to_string(at + a + bad) +
               "; the bpe tokenizer needs UTF-8 text: convert the file (iconv -f latin1 -t "
               "utf-8) or leave it out");
        }
        add_lines(body);
      }
    }
    ::close(fd);
  }
  return out;
}

class VectorSentences : public sentencepiece::SentenceIterator {
 public:
  explicit VectorSentences(const std::vector<std::string>& v) : v_(v) {}
  bool done() const override { return i_ >= v_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return v_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& v_;
  size_t i_ = 0;
};

// Trains a sentencepiece BPE model; returns the serialized model.
std::string train_bpe(const Corpus& c, const PrepareOptions& opt, int vocab, int threads) {
  std::vector<std::string> sentences = sample_sentences(c, opt.bpe_sample_bytes);
  if (sentences.empty()) fail("the inputs hold no text to train the bpe tokenizer on");
  if (!opt.quiet)
    std::fprintf(stderr, "prepare: training a %d-piece BPE tokenizer on %zu lines...\n", vocab,
                 sentences.size());
  std::unordered_map<std::string, std::string> kw = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocab)},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},  // the text is kept as is: decode(encode(x)) == x
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"character_coverage", "0.9995"},
      {"max_sentence_length", "16384"},
      {"input_sentence_size", "0"},
      {"num_threads", std::to_string(threads)},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},  // </s>: the end-of-text token between documents
      {"pad_id", "-1"},
      {"minloglevel", opt.quiet ? "2" : "1"},
  };
  VectorSentences it(sentences);
  std::string model;
  auto st = sentencepiece::SentencePieceTrainer::Train(kw, &it, &model);
  if (!st.ok()) {
    const std::string msg = st.message();
    // Too small: every character of the corpus (plus the byte pieces) needs an id of its own.
    const bool too_small = msg.find("smaller than required_chars") != std::string::npos;
    fail("training the bpe tokenizer failed: " + msg + " (vocab_size " + std::to_string(vocab) + "): " +
         (too_small ? "choose a larger --vocab-size" : "choose a smaller --vocab-size or a larger corpus"));
  }
  return model;
}

// ---- output directory and manifest ----------------------------------------------------------

json options_json(const PrepareOptions& opt, int vocab, const std::vector<std::string>& inputs) {
  json o = {{"tokenizer", opt.tokenizer},       {"vocab_size", vocab},
            {"val_fraction", opt.val_fraction}, {"shard_tokens", opt.shard_tokens},
            {"inputs", inputs}};
  if (opt.tokenizer == "bpe") {
    o["bpe_sample_bytes"] = opt.bpe_sample_bytes;
    o["tokenizer_model"] = opt.tokenizer_model.empty()
                               ? json(nullptr)
                               : json(fs::absolute(opt.tokenizer_model).lexically_normal().string());
  }
  return o;
}

json sources_key(const Corpus& c) {  // what decides whether a dataset is the same
  json a = json::array();
  for (const SourceFile& f : c.files)
    a.push_back({{"path", f.path}, {"kind", f.kind == SourceKind::jsonl ? "jsonl" : "text"},
                 {"bytes", f.bytes}, {"mtime_ns", f.mtime_ns}});
  return a;
}

// Removes the temporary directory (and parents prepare created) unless the dataset was kept.
struct TmpGuard {
  fs::path tmp, created_root;
  bool keep = false;
  ~TmpGuard() {
    if (keep) return;
    std::error_code ec;
    if (!tmp.empty()) fs::remove_all(tmp, ec);
    if (!created_root.empty()) fs::remove_all(created_root, ec);
  }
};

PrepareResult result_from_manifest(const json& m) {
  PrepareResult r;
  r.reused = true;
  r.train_tokens = m["splits"]["train"]["tokens"].get<uint64_t>();
  r.val_tokens = m["splits"]["val"]["tokens"].get<uint64_t>();
  r.bytes_read = m.value("bytes_read", uint64_t{0});
  r.vocab_size = m["tokenizer"]["vocab_size"].get<int>();
  for (const json& s : m.value("skipped", json::array()))
    r.skipped.push_back(s["path"].get<std::string>() + ": " + s["reason"].get<std::string>());
  return r;
}

}  // namespace

PrepareResult prepare_dataset(const PrepareOptions& opt,
                              const std::function<void(uint64_t, uint64_t)>& progress_cb) {
  // -- options
  if (opt.tokenizer != "byte" && opt.tokenizer != "bpe")
    fail("--tokenizer '" + opt.tokenizer + "' is not known: use byte or bpe");
  int vocab = opt.vocab_size;
  if (opt.tokenizer == "byte") {
    if (vocab != 0 && vocab != 257)
      fail("--vocab-size " + std::to_string(vocab) +
           " does not fit the byte tokenizer, which has exactly 257 ids (256 byte values + "
           "<|endoftext|>): leave --vocab-size out or use --tokenizer bpe");
    if (!opt.tokenizer_model.empty())
      fail("a tokenizer model file is for --tokenizer bpe, not byte");
    vocab = 257;
  } else {
    if (vocab == 0) vocab = 8000;
    if (vocab < 300 || vocab > (1 << 20))
      fail("--vocab-size " + std::to_string(vocab) +
           " is out of range for bpe: it needs 256 byte pieces + 3 special tokens + merges; use "
           "a value in [300, 1048576] (token shards are uint16 up to 65536 ids, uint32 above)");
  }
  if (!(opt.val_fraction >= 0.0 && opt.val_fraction <= 0.5))
    fail("--val-fraction " + std::to_string(opt.val_fraction) + " is out of range: use a value in [0, 0.5]");
  if (opt.shard_tokens == 0) fail("shard_tokens must be at least 1");
  if (opt.out_dir.empty()) fail("no output directory: give --out DIR");
  int threads = opt.threads > 0 ? opt.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  fs::path out = fs::absolute(opt.out_dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();

  // -- inputs
  Corpus corpus = walk_inputs(opt.inputs);
  std::vector<std::string> inputs_abs;
  for (const std::string& in : opt.inputs) inputs_abs.push_back(fs::absolute(in).lexically_normal().string());
  if (corpus.files.empty() || corpus.total_bytes == 0) {
    std::string msg = "the corpus is empty: no text file found in the inputs";
    if (!corpus.skipped.empty()) {
      msg += " (skipped: ";
      for (size_t i = 0; i < corpus.skipped.size() && i < 5; ++i)
        msg += (i ? "; " : "") + corpus.skipped[i].first + ": " + corpus.skipped[i].second;
      if (corpus.skipped.size() > 5) msg += "; ...";
      msg += ")";
    }
    fail(msg + ": give .txt, .md, .jsonl or extensionless UTF-8 files");
  }
  if (!opt.tokenizer_model.empty()) {
    std::unique_ptr<Tokenizer> t = Tokenizer::sentencepiece(opt.tokenizer_model);
    if (opt.vocab_size != 0 && opt.vocab_size != t->vocab_size())
      fail("--vocab-size " + std::to_string(opt.vocab_size) + " differs from the tokenizer model's " +
           std::to_string(t->vocab_size()) + ": leave --vocab-size out");
    vocab = t->vocab_size();
  }
  json options = options_json(opt, vocab, inputs_abs);
  json key = sources_key(corpus);

  // -- an existing output directory
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out))
      fail("--out '" + out.string() + "' is a file: choose a directory path");
    fs::path mpath = out / "manifest.json";
    if (fs::exists(mpath)) {
      json m;
      try {
        std::ifstream in(mpath);
        m = json::parse(in);
      } catch (const std::exception&) {
      }
      json old_key = json::array();
      for (const json& s : m.value("sources", json::array()))
        old_key.push_back({{"path", s.value("path", "")}, {"kind", s.value("kind", "")},
                           {"bytes", s.value("bytes", uint64_t{0})}, {"mtime_ns", s.value("mtime_ns", int64_t{0})}});
      if (m.value("options", json()) == options && old_key == key) {
        if (!opt.quiet)
          std::fprintf(stderr, "prepare: '%s' is already prepared from the same inputs and options; nothing to do\n",
                       out.c_str());
        return result_from_manifest(m);
      }
      std::string what = m.value("options", json()) != options ? "other options" : "other or changed input files";
      fail("--out '" + out.string() + "' already holds a different dataset (" + what +
           "): choose another --out or delete that directory");
    }
    if (!fs::is_empty(out))
      fail("--out '" + out.string() + "' exists and holds other files (no manifest.json): choose "
           "another --out or delete that directory");
  }

  TmpGuard guard;
  for (fs::path p = out.parent_path(); !p.empty() && !fs::exists(p); p = p.parent_path()) guard.created_root = p;
  fs::create_directories(out.parent_path(), ec);
  if (ec) fail("cannot create the parent of --out '" + out.string() + "': " + ec.message());
  std::string tmpl = out.string() + ".tmp-XXXXXX";
  if (!::mkdtemp(tmpl.data())) fail_errno("cannot create a temporary directory beside", out.string());
  guard.tmp = tmpl;

  PrepareResult res;
  for (auto& [p, why] : corpus.skipped) res.skipped.push_back(p + ": " + why);
  // With a progress callback the caller reports progress, skipped files and the summary.
  const bool report = !opt.quiet && !progress_cb;
  if (report && !res.skipped.empty()) {
    std::fprintf(stderr, "prepare: warning: skipped %zu file(s):\n", res.skipped.size());
    for (size_t i = 0; i < res.skipped.size() && i < 20; ++i) std::fprintf(stderr, "  %s\n", res.skipped[i].c_str());
    if (res.skipped.size() > 20) std::fprintf(stderr, "  ... (all are listed in manifest.json)\n");
  }

  // -- tokenizer
  json tok = {{"kind", opt.tokenizer}};
  sentencepiece::SentencePieceProcessor sp;
  int newline_id = -1, eot = 256;
  if (opt.tokenizer == "bpe") {
    auto t0 = Clock::now();
    std::string model;
    if (!opt.tokenizer_model.empty()) {
      std::ifstream in(opt.tokenizer_model, std::ios::binary);
      model.assign(std::istreambuf_iterator<char>(in), {});
    } else {
      model = train_bpe(corpus, opt, vocab, threads);
    }
    auto st = sp.LoadFromSerializedProto(model);
    if (!st.ok()) fail("the bpe tokenizer model cannot be loaded: " + std::string(st.message()));
    write_file_synced((guard.tmp / "tokenizer.model").string(), model, 0644);
    vocab = sp.GetPieceSize();
    eot = sp.eos_id();
    int nl = sp.PieceToId("<0x0A>");
    newline_id = (nl != sp.unk_id() && sp.IsByte(nl)) ? nl : -1;
    TD_CHECK(eot >= 0, "the tokenizer model has no </s> (eos) piece to separate documents: train it with eos_id set");
    tok["model_file"] = "tokenizer.model";
    res.train_seconds = seconds_since(t0);
  }
  tok["vocab_size"] = vocab;
  tok["eot_id"] = eot;
  if (newline_id >= 0) tok["newline_id"] = newline_id;
  const int width = vocab <= 65536 ? 2 : 4;

  // -- encode
  uint64_t val_bytes = static_cast<uint64_t>(std::llround(static_cast<double>(corpus.total_bytes) * opt.val_fraction));
  Output output(guard.tmp.string(), width, opt.shard_tokens, corpus.total_bytes - val_bytes);
  Progress progress(report, corpus.total_bytes, progress_cb);
  auto t1 = Clock::now();
  std::vector<uint32_t> crcs = opt.tokenizer == "bpe"
                                   ? encode_bpe(corpus, output, progress, sp, newline_id, threads)
                                   : encode_byte(corpus, output, progress);
  output.finish();
  progress.end();
  res.encode_seconds = seconds_since(t1);
  res.train_tokens = output.train().tokens();
  res.val_tokens = output.val().tokens();
  // The split is made in bytes, at a unit's start (a JSONL document is never cut): with a few
  // large documents the tokens can end up far from --val-fraction. Say so rather than let
  // `train` later blame the corpus.
  if (const uint64_t all = res.train_tokens + res.val_tokens; all > 0 && opt.val_fraction > 0) {
    const double got = static_cast<double>(res.val_tokens) / static_cast<double>(all);
    if (std::fabs(got - opt.val_fraction) > 0.25 * opt.val_fraction) {
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "the validation split holds %.1f %% of the tokens, not the %.1f %% of --val-fraction: the split falls "
                    "between documents and this corpus has few, large ones; split the documents or give a separate "
                    "validation file",
                    100 * got, 100 * opt.val_fraction);
      res.warnings.push_back(buf);
      if (!opt.quiet) std::fprintf(stderr, "warning: prepare: %s\n", buf);
    }
  }
  res.bytes_read = corpus.total_bytes;
  res.vocab_size = vocab;

  // -- manifest, then the rename that publishes the dataset
  json sources = json::array();
  for (size_t i = 0; i < corpus.files.size(); ++i) {
    json s = key[i];
    s["crc32"] = hex32(crcs[i]);
    sources.push_back(s);
  }
  json skipped = json::array();
  for (auto& [p, why] : corpus.skipped) skipped.push_back({{"path", p}, {"reason", why}});
  json m = {
      {"format", "traindeck-dataset"},
      {"format_version", 1},
      {"created_by", std::string("traindeck-engine ") + TD_VERSION},
      {"tokenizer", tok},
      {"token_dtype", width == 2 ? "uint16" : "uint32"},
      {"val_fraction", opt.val_fraction},
      {"options", options},
      {"bytes_read", corpus.total_bytes},
      {"sources", sources},
      {"skipped", skipped},
      {"splits",
       {{"train", {{"tokens", res.train_tokens}, {"shards", output.train().shards()}}},
        {"val", {{"tokens", res.val_tokens}, {"shards", output.val().shards()}}}}},
  };
  write_file_synced((guard.tmp / "manifest.json").string(), m.dump(2) + "\n", 0644);
  sync_dir(guard.tmp.string());
  if (fs::exists(out)) fs::remove(out, ec);  // an empty directory (checked above)
  if (::rename(guard.tmp.c_str(), out.c_str()) != 0) fail_errno("cannot rename the dataset to", out.string());
  guard.keep = true;
  sync_dir(out.parent_path().string());
  if (report)
    std::fprintf(stderr, "prepare: %s: %llu train + %llu val tokens, vocab %d\n", out.c_str(),
                 static_cast<unsigned long long>(res.train_tokens),
                 static_cast<unsigned long long>(res.val_tokens), vocab);
  return res;
}

}  // namespace td
