// traindeck-engine prepare: text files -> a dataset directory (token shards, tokenizer, manifest;
// docs/formats.md). engine/cli/command.h.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "engine/cli/command.h"
#include "engine/common/error.h"
#include "engine/data/prepare.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// prepare stops cleanly on SIGINT/SIGTERM/SIGHUP: the next progress report (at most 250 ms
// later while encoding) throws PrepareCancelled, so prepare_dataset removes its temporary
// directory. A second signal (e.g. during BPE training, which reports no progress) exits at once.
std::atomic<int> g_prepare_signals{0};  // lock-free: safe in a signal handler
struct PrepareCancelled {};
extern "C" void on_prepare_signal(int) {
  if (g_prepare_signals.fetch_add(1) > 0) _exit(130);
  const char msg[] = "\nprepare: stopping (nothing will be kept); send the signal again to quit at once\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

// --progress-json: stdout carries only JSON Lines (docs/formats.md "Progress for programs"):
//   {"type":"progress","bytes_done":D,"bytes_total":T}     at most 4 per second, and at the end
//   {"type":"done","out":"/abs/dir","reused":false,"manifest":{...manifest.json...}}
// Errors stay on stderr ("error: ...") with exit code 1; a cancel (signal) exits 130.
int run_prepare(const td::PrepareOptions& opt, bool progress_json) {
  struct sigaction sa = {};
  sa.sa_handler = on_prepare_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a reader that went away: writes fail, prepare still finishes cleanly
  bool progress_shown = false;
  td::PrepareResult r;
  try {
    r = td::prepare_dataset(opt, [&](uint64_t done, uint64_t total) {
      if (g_prepare_signals.load() > 0) throw PrepareCancelled{};
      if (progress_json) {
        std::printf("{\"type\":\"progress\",\"bytes_done\":%llu,\"bytes_total\":%llu}\n",
                    (unsigned long long)done, (unsigned long long)total);
        std::fflush(stdout);
        return;
      }
      if (opt.quiet) return;
      progress_shown = true;
      std::fprintf(stderr, "\rprepare: %6.1f / %.1f MB (%3.0f%%)", done / 1e6, total / 1e6, total ? 100.0 * done / total : 100.0);
      std::fflush(stderr);
    });
  } catch (const PrepareCancelled&) {
    if (progress_shown) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "prepare: cancelled; nothing was written to %s\n", opt.out_dir.c_str());
    return 130;
  }
  if (progress_shown) std::fprintf(stderr, "\n");
  // Debian's fortunes directory alone skips ~100 index files: show a few, the manifest has all.
  const size_t show = r.reused ? 0 : (r.skipped.size() > 8 ? 5 : r.skipped.size());
  for (size_t i = 0; i < show; i++) std::fprintf(stderr, "warning: skipped %s\n", r.skipped[i].c_str());
  if (!r.reused && show < r.skipped.size())
    std::fprintf(stderr, "warning: ... and %zu more skipped files (listed under \"skipped\" in %s/manifest.json)\n",
                 r.skipped.size() - show, opt.out_dir.c_str());
  if (progress_json) {
    fs::path out = fs::absolute(opt.out_dir).lexically_normal();
    if (out.filename().empty()) out = out.parent_path();
    const json manifest = td::read_json_file((out / "manifest.json").string());
    std::printf("{\"type\":\"done\",\"out\":%s,\"reused\":%s,\"manifest\":%s}\n", json(out.string()).dump().c_str(),
                r.reused ? "true" : "false", manifest.dump().c_str());
    std::fflush(stdout);
    return 0;
  }
  std::printf("dataset %s: %llu train tokens, %llu val tokens, vocab %d, %.1f MB of text\n", opt.out_dir.c_str(),
              (unsigned long long)r.train_tokens, (unsigned long long)r.val_tokens, r.vocab_size, r.bytes_read / 1e6);
  return 0;
}

}  // namespace

namespace td::cli {

Command add_prepare_command(CLI::App& app) {
  struct State {
    td::PrepareOptions opt;
    bool progress_json = false;
  };
  auto s = std::make_shared<State>();
  auto* prep = app.add_subcommand("prepare", "Tokenize text files into a dataset directory");
  prep->add_option("--input", s->opt.inputs, "Text files or directories (recursive)")->required();
  prep->add_option("--out", s->opt.out_dir, "Output dataset directory")->required();
  prep->add_option("--tokenizer", s->opt.tokenizer, "byte or bpe")->check(CLI::IsMember({"byte", "bpe"}));
  prep->add_option("--vocab-size", s->opt.vocab_size, "Vocabulary size (bpe; default 8000)");
  prep->add_option("--tokenizer-model", s->opt.tokenizer_model, "Encode with this existing sentencepiece model (bpe) instead of training one")
      ->check(CLI::ExistingFile);
  prep->add_option("--val-fraction", s->opt.val_fraction, "Fraction of the token stream kept for validation")->check(CLI::Range(0.0, 0.5));
  prep->add_option("--threads", s->opt.threads, "Encoding threads (0: all cores)")->check(CLI::Range(0, 4096));
  prep->add_flag("--quiet", s->opt.quiet, "No progress line");
  prep->add_flag("--progress-json", s->progress_json,
                 "For programs: stdout is JSON Lines only, {\"type\":\"progress\",\"bytes_done\":D,"
                 "\"bytes_total\":T} per update, then {\"type\":\"done\",\"out\":DIR,\"reused\":B,"
                 "\"manifest\":{...}}; errors on stderr, exit code 1 (130 when cancelled by a signal)");
  return {prep, [s] { return run_prepare(s->opt, s->progress_json); }};
}

}  // namespace td::cli
