// traindeck-engine sample: generate text from a checkpoint (engine/train/sampler.h).
// engine/cli/command.h.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include "engine/checkpoint/checkpoint.h"
#include "engine/cli/command.h"
#include "engine/common/error.h"
#include "engine/common/rng.h"
#include "engine/model/gpt.h"
#include "engine/ops/cpu_ops.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/sampler.h"

namespace fs = std::filesystem;

namespace {

// sample --stream: writes the text of the tokens as they come, so that the concatenation of
// everything written is exactly the text `sample` prints without --stream (prompt, generated
// text, "\n"). The generated ids are decoded as a whole each time and only what is new at the
// end is written: a tokenizer's decode is not always the concatenation of its tokens' decodes
// (sentencepiece joins byte pieces into one UTF-8 character and turns an incomplete one into
// U+FFFD), so a trailing U+FFFD is held back until the next token settles it. On a terminal a
// UTF-8 sequence cut at the end is held back too, and what is written goes through
// terminal_safe() as without --stream. Decoding the whole each time costs O(tokens) per token,
// small beside the forward pass over seq_len tokens that each token takes.
class StreamPrinter {
 public:
  StreamPrinter(const td::Tokenizer& tok, const std::string& prompt, bool tty) : tok_(tok), tty_(tty) {
    write(prompt);
    base_ = prompt.size();
  }
  void token(uint32_t id) {
    ids_.push_back(id);
    std::string text = tok_.decode(ids_);
    static const std::string kReplacement = "\xEF\xBF\xBD";
    while (text.size() >= kReplacement.size() && text.compare(text.size() - 3, 3, kReplacement) == 0) text.resize(text.size() - 3);
    const size_t done = written_.size() - base_;
    if (text.size() <= done || text.compare(0, done, written_, base_, done) != 0) return;  // nothing settled yet
    write(text.substr(done));
  }
  // `text`: the whole output without --stream; writes what is not written yet.
  void finish(const std::string& text) {
    if (text.size() > written_.size() && text.compare(0, written_.size(), written_) == 0) write(text.substr(written_.size()));
    if (tty_ && !held_.empty()) emit(td::terminal_safe(held_));
    std::fflush(stdout);
  }

 private:
  void write(const std::string& bytes) {
    written_ += bytes;
    if (!tty_) return emit(bytes);
    // A UTF-8 sequence cut by the end waits for its other bytes (terminal_safe would escape it).
    std::string s = held_ + bytes;
    size_t cut = s.size();
    for (size_t back = 1; back <= 3 && back <= s.size(); back++) {
      const unsigned char c = (unsigned char)s[s.size() - back];
      if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (need > back) cut = s.size() - back;
      break;
    }
    held_ = s.substr(cut);
    emit(td::terminal_safe(s.substr(0, cut)));
  }
  static void emit(const std::string& bytes) {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  }
  const td::Tokenizer& tok_;
  bool tty_;
  std::vector<uint32_t> ids_;
  std::string written_;  // everything written so far (before terminal_safe)
  size_t base_ = 0;      // the prompt's bytes at its front
  std::string held_;     // tty: the start of a cut UTF-8 sequence
};

struct SampleState {
  std::string ckpt, prompt, dataset;
  td::SampleOptions opt;
  uint64_t seed = 1;
  bool stream = false;
};

int run_sample(const SampleState& s) {
  std::string dir = s.ckpt;
  if (!fs::exists(dir + "/trainer.json")) {
    std::vector<std::string> damaged;
    auto latest = td::latest_checkpoint(dir + "/checkpoints", &damaged);
    for (const auto& d : damaged) std::fprintf(stderr, "warning: skipped a checkpoint that does not verify: %s\n", d.c_str());
    if (!latest)
      throw td::Error("'" + s.ckpt + "' is neither a checkpoint nor a run directory with checkpoints" +
                      (damaged.empty() ? std::string() : " that verify"));
    dir = *latest;
    if (!damaged.empty())
      std::fprintf(stderr, "note: using %s (step %d), the newest checkpoint that verifies\n", dir.c_str(), td::read_trainer_state(dir).step);
  } else if (const std::string problem = td::checkpoint_problem(dir); !problem.empty()) {
    throw td::Error("checkpoint '" + dir + "' cannot be used: " + problem + " (give the run directory to use its newest checkpoint that verifies)");
  }
  if (const std::string note = td::checkpoint_note(dir); !note.empty()) std::fprintf(stderr, "warning: %s\n", note.c_str());
  td::TrainerState st = td::read_trainer_state(dir);
  td::RunConfig cfg = td::parse_config(st.config);
  if (!s.dataset.empty()) cfg.data.path = s.dataset;
  td::set_cpu_threads(cfg.train.threads);
  auto tok = td::Tokenizer::load(cfg.data.path);
  if (tok->vocab_size() != cfg.model.vocab_size)
    throw td::Error("the tokenizer of '" + cfg.data.path + "' has " + std::to_string(tok->vocab_size()) +
                    " tokens but the model was trained with vocab_size " + std::to_string(cfg.model.vocab_size) +
                    ": use --data with the dataset the model was trained on");
  auto be = td::make_cpu_backend();
  td::GPT model(cfg.model, *be, 1);
  td::load_checkpoint(dir, model, nullptr);
  td::Rng rng(s.seed);
  const bool tty = ::isatty(STDOUT_FILENO);
  std::unique_ptr<StreamPrinter> printer;
  if (s.stream) printer = std::make_unique<StreamPrinter>(*tok, s.prompt, tty);
  auto ids = td::generate(model, tok->encode(s.prompt), tok->eot_id(), s.opt, rng,
                          printer ? std::function<void(uint32_t)>([&](uint32_t id) { printer->token(id); })
                                  : std::function<void(uint32_t)>());
  // The exact bytes for a pipe or a file (scripts; NULs included), escaped on a terminal:
  // an untrained byte-level model writes invalid UTF-8 and control bytes (docs/guide.md).
  std::string text = s.prompt + tok->decode(ids) + "\n";
  if (printer) {
    printer->finish(text);
    return 0;
  }
  if (tty) text = td::terminal_safe(text);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

namespace td::cli {

Command add_sample_command(CLI::App& app) {
  auto s = std::make_shared<SampleState>();
  auto* samp = app.add_subcommand("sample", "Generate text from a checkpoint");
  samp->add_option("--checkpoint", s->ckpt, "Checkpoint directory (step_NNNNNNNN) or a run directory (its newest)")->required();
  samp->add_option("--prompt", s->prompt, "Text to continue");
  samp->add_option("--tokens", s->opt.max_new_tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  samp->add_option("--temperature", s->opt.temperature, "Sampling temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  samp->add_option("--top-k", s->opt.top_k, "Top-k (0: all)")->check(CLI::Range(0, 1 << 24));
  samp->add_option("--seed", s->seed, "Sampling seed");
  samp->add_option("--data", s->dataset, "Dataset directory whose tokenizer to use (default: the run's)");
  samp->add_flag("--stream", s->stream,
                 "Write each token's text to stdout as it is generated (flushed), for programs that show it growing; "
                 "the bytes written are the same as without --stream");
  return {samp, [s] { return run_sample(*s); }};
}

}  // namespace td::cli
