// traindeck-engine: the command-line front of the engine.
//   prepare   text files -> dataset directory (token shards, tokenizer, manifest)
//   train     train a model from a config; events on stdout and in <out>/events.jsonl
//   sample    generate text from a checkpoint
//   plan      parameters, FLOPs and memory of a config
//   profile   time each backend op of a few training steps of a config
//   calibrate measure this CPU's sgemm peak (the MFU denominator) and the engine's share of it
//   devices   the devices this engine can train on (cpu, cuda:N), as JSON
//   config    print the config reference (docs/config.md)
//   export    a checkpoint as a Hugging Face GPT-2 or Llama directory, or raw safetensors (docs/export.md)
//   runs      list, show and export runs in the store
//   launch    start N local ranks of a data-parallel run (docs/distributed.md)
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "engine/checkpoint/checkpoint.h"
#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "engine/config.h"
#include "engine/data/prepare.h"
#include "engine/dist/env.h"
#include "engine/dist/launch.h"
#include "engine/export/export.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/op_profile.h"
#include "engine/metrics/nvml.h"
#include "engine/metrics/step_fields.h"
#include "engine/metrics/sysinfo.h"
#include "engine/ops/backend.h"
#include "engine/model/gpt.h"
#include "engine/ops/blas_kernel.h"
#include "engine/ops/cpu_ops.h"
#include "engine/plan/cluster.h"
#include "engine/plan/plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/sampler.h"
#include "engine/train/trainer.h"
#include "engine/cli/runs_cmd.h"
#include "engine/cli/db_sink.h"
#include "store/ingest.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// "llama, qwen2": names separated by commas (the config reference's "*... only*" marks).
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Reads --config, resolves data.path against the config file's directory, applies --set.
td::RunConfig load_config(const std::string& path, const std::vector<std::string>& sets) {
  json doc = td::read_json_file(path);
  if (doc.is_object() && doc.contains("data") && doc["data"].is_object() && doc["data"].contains("path") &&
      doc["data"]["path"].is_string()) {
    fs::path p = doc["data"]["path"].get<std::string>();
    if (p.is_relative()) doc["data"]["path"] = (fs::absolute(path).parent_path() / p).lexically_normal().string();
  }
  for (const auto& s : sets) td::apply_override(doc, s);
  td::RunConfig cfg = td::parse_config(doc);
  // A path from --set is taken from the current directory; stored absolute so that the run's
  // config (checkpoints, events, store) means the same from anywhere.
  if (!cfg.data.path.empty()) cfg.data.path = fs::absolute(cfg.data.path).lexically_normal().string();
  return cfg;
}

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
int cmd_prepare(const td::PrepareOptions& opt, bool progress_json) {
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

}  // namespace

int main(int argc, char** argv) {
  td::ensure_blas_kernel(argv);  // may re-execute this program once with a faster GEMM kernel
  CLI::App app{"traindeck-engine " TD_VERSION ": train GPT-style language models (TrainDeck's engine)"};
  app.set_version_flag("--version", std::string("traindeck-engine ") + TD_VERSION);
  app.require_subcommand(1);

  // prepare
  td::PrepareOptions popt;
  auto* prep = app.add_subcommand("prepare", "Tokenize text files into a dataset directory");
  prep->add_option("--input", popt.inputs, "Text files or directories (recursive)")->required();
  prep->add_option("--out", popt.out_dir, "Output dataset directory")->required();
  prep->add_option("--tokenizer", popt.tokenizer, "byte or bpe")->check(CLI::IsMember({"byte", "bpe"}));
  prep->add_option("--vocab-size", popt.vocab_size, "Vocabulary size (bpe; default 8000)");
  prep->add_option("--tokenizer-model", popt.tokenizer_model, "Encode with this existing sentencepiece model (bpe) instead of training one")->check(CLI::ExistingFile);
  prep->add_option("--val-fraction", popt.val_fraction, "Fraction of the token stream kept for validation")->check(CLI::Range(0.0, 0.5));
  prep->add_option("--threads", popt.threads, "Encoding threads (0: all cores)")->check(CLI::Range(0, 4096));
  prep->add_flag("--quiet", popt.quiet, "No progress line");
  bool progress_json = false;
  prep->add_flag("--progress-json", progress_json,
                 "For programs: stdout is JSON Lines only, {\"type\":\"progress\",\"bytes_done\":D,"
                 "\"bytes_total\":T} per update, then {\"type\":\"done\",\"out\":DIR,\"reused\":B,"
                 "\"manifest\":{...}}; errors on stderr, exit code 1 (130 when cancelled by a signal)");

  // train
  std::string config_path, db_path, experiment = "default";
  std::vector<std::string> sets;
  td::TrainOptions topt;
  double peak = 0;
  auto* train = app.add_subcommand("train", "Train a model");
  train->add_option("--config", config_path, "Run config (JSON)")->required()->check(CLI::ExistingFile);
  train->add_option("--set", sets, "Override a field: section.field=value (repeatable)");
  train->add_option("--out", topt.out_dir, "Run directory (default: runs/<run-id>)");
  train->add_option("--run-id", topt.run_id, "Run id (default: generated): letters, digits, '.', '_', '-'")
      ->check(CLI::Validator([](std::string& id) -> std::string { return td::valid_run_id(id) ? "" : td::kRunIdRule; }, "RUN_ID"));
  train->add_option("--run-name", topt.run_name,
                    "A name for people (\"lr=1e-3, 6 layers\"), shown instead of the id in the workbench and runs list")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            std::string problem;
            name = td::normalise_run_name(name, &problem);
            return problem;
          },
          "NAME"));
  train->add_flag("--resume", topt.resume, "Continue from the newest checkpoint in --out that verifies (checksums, finite weights)");
  int resume_from = -1;
  auto* o_resume_from = train->add_option("--resume-from", resume_from,
                                          "Continue from the checkpoint of this step in --out (implies --resume; it must verify); "
                                          "newer checkpoints are renamed step_NNNNNNNN.set-aside-ATTEMPT")
                            ->check(CLI::NonNegativeNumber);
  train->add_option("--init-from", topt.init_from,
                    "Start a new run (step 0, fresh optimizer) from these weights: an export (hf or safetensors), "
                    "a checkpoint or a run directory; the model shape must match");
  // Shorthands for --set train.metrics_port=PORT / train.metrics_address=ADDR.
  std::string metrics_port, metrics_address;
  train->add_option("--metrics-port", metrics_port,
                    "Serve the run's current figures to Prometheus on this port (text format at /metrics; 0: a free port, "
                    "named in run_start's metrics_url); as --set train.metrics_port=PORT");
  train->add_option("--metrics-address", metrics_address,
                    "Address --metrics-port listens on (default 127.0.0.1: this machine only; 0.0.0.0: every interface); "
                    "as --set train.metrics_address=ADDR");
  train->add_option("--db", db_path, "Also record the run in this SQLite store");
  train->add_option("--experiment", experiment, "Experiment name in the store");
  train->add_option("--peak-flops", peak, "Peak FLOP/s for MFU (default: calibrated sgemm peak)");
  train->add_flag("--quiet", topt.quiet, "No progress lines on stderr");
  bool no_stdout = false;
  train->add_flag("--no-events-stdout", no_stdout, "Write events only to <out>/events.jsonl, not to stdout");
  train->add_option("--debug-stop-after", topt.stop_after_step, "Testing: stop (as on SIGINT) after this step")->group("");
  train->add_option("--debug-nonfinite-at", topt.inject_nonfinite_steps, "Testing: force a non-finite loss at these steps")->group("");
  train->add_option("--debug-loss-spike-at", topt.inject_loss_spike_steps, "Testing: report ten times the loss at these steps")->group("");
  train->add_option("--debug-nonfinite-weights-at", topt.inject_nonfinite_weights_step,
                    "Testing: make the first weight NaN after this step's update")->group("");
  train->add_option("--debug-window-log", topt.window_log, "Testing: each rank appends its window ids per micro batch to PATH.<rank>")->group("");

  // launch
  td::dist::LaunchOptions lopt;
  auto* launch = app.add_subcommand("launch", "Start N local ranks of a data-parallel run: launch --nproc N -- train --config run.json ...");
  launch->add_option("--nproc", lopt.nproc, "Ranks to start on this machine")->required()->check(CLI::Range(1, 4096));
  launch->add_option("--master-addr", lopt.master_addr, "Address of rank 0's rendezvous store (default 127.0.0.1)");
  launch->add_option("--master-port", lopt.master_port, "Its TCP port (default: a free one)")->check(CLI::Range(0, 65535));
  launch->add_option("--grace", lopt.grace_s, "Seconds the other ranks get to stop after one fails, before SIGKILL")->check(CLI::Range(0.0, 1e6));
  launch->add_flag("--quiet", lopt.quiet, "No launch: lines on stderr");
  launch->add_option("command", lopt.command, "The command of each rank, after --: train --config run.json ...")->required();

  // sample
  std::string ckpt, prompt, dataset;
  td::SampleOptions sopt;
  uint64_t sample_seed = 1;
  auto* samp = app.add_subcommand("sample", "Generate text from a checkpoint");
  samp->add_option("--checkpoint", ckpt, "Checkpoint directory (step_NNNNNNNN) or a run directory (its newest)")->required();
  samp->add_option("--prompt", prompt, "Text to continue");
  samp->add_option("--tokens", sopt.max_new_tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  samp->add_option("--temperature", sopt.temperature, "Sampling temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  samp->add_option("--top-k", sopt.top_k, "Top-k (0: all)")->check(CLI::Range(0, 1 << 24));
  samp->add_option("--seed", sample_seed, "Sampling seed");
  samp->add_option("--data", dataset, "Dataset directory whose tokenizer to use (default: the run's)");
  bool sample_stream = false;
  samp->add_flag("--stream", sample_stream,
                 "Write each token's text to stdout as it is generated (flushed), for programs that show it growing; "
                 "the bytes written are the same as without --stream");

  // plan
  bool plan_json = false;
  int world = 1;
  auto* plan = app.add_subcommand("plan", "Parameters, FLOPs and memory per rank of a config");
  plan->add_option("--config", config_path, "Run config (JSON)")->required()->check(CLI::ExistingFile);
  plan->add_option("--set", sets, "Override a field (repeatable)");
  plan->add_option("--world-size", world, "Ranks")->check(CLI::Range(1, 1 << 20));
  plan->add_flag("--json", plan_json, "JSON output");
  // The infrastructure planner (engine/plan/cluster.h, docs/planner.md): any of these options
  // adds the cluster section (memory per ZeRO stage, time, bandwidths, devices needed, cost).
  td::ClusterOptions copt;
  std::string plan_precision, plan_devices = td::user_devices_path();
  double plan_price = -1;
  auto* o_dev = plan->add_option("--device", copt.device, "Device type from the catalogue (H100, A100-80GB, cpu, ...)");
  auto* o_tok = plan->add_option("--tokens", copt.tokens, "Token budget (default: train.steps x tokens per step)")
                    ->check(CLI::PositiveNumber);
  auto* o_mfu = plan->add_option("--mfu", copt.mfu, "Model FLOPs utilisation assumed (default 0.4)")->check(CLI::Range(1e-6, 1.0));
  auto* o_dl = plan->add_option("--deadline-hours", copt.deadline_hours, "Deadline for the devices-needed table")
                   ->check(CLI::NonNegativeNumber);
  auto* o_zero = plan->add_option("--zero", copt.zero, "ZeRO stage 0..3 (train.zero)")->check(CLI::Range(0, 3));
  int plan_tp = 0;
  auto* o_tp = plan->add_option("--tensor-parallel", plan_tp, "Devices per tensor-parallel group (default: the config's train.tensor_parallel)")
                   ->check(CLI::Range(1, 64));
  auto* o_prec = plan->add_option("--precision", plan_precision, "fp32 or mixed (default: mixed where the device has bf16/fp16)")
                     ->check(CLI::IsMember({"fp32", "mixed"}));
  auto* o_price = plan->add_option("--price", plan_price, "Price per device-hour (overrides the catalogue)")->check(CLI::NonNegativeNumber);
  plan->add_option("--devices", plan_devices, "User device catalogue (default ~/.config/traindeck/devices.json)");

  // calibrate
  int cal_threads = 0;
  auto* cal = app.add_subcommand("calibrate", "Measure this CPU's sgemm peak (MFU denominator) and the engine's share of it, and cache both");
  cal->add_option("--threads", cal_threads, "Threads (0: all cores)")->check(CLI::Range(0, 4096));

  // profile
  int prof_steps = 3;
  bool prof_json = false;
  auto* prof = app.add_subcommand("profile", "Time each backend op of a few training steps of a config (synthetic tokens, "
                                             "no dataset read): where a step's time goes, on the CPU or a GPU");
  prof->add_option("--config", config_path, "Run config (JSON)")->required()->check(CLI::ExistingFile);
  prof->add_option("--set", sets, "Override a field (repeatable)");
  prof->add_option("--steps", prof_steps, "Timed steps after one warm-up step (default 3)")->check(CLI::Range(1, 1000));
  prof->add_flag("--json", prof_json, "JSON output (docs in engine/metrics/op_profile.h)");

  // devices
  auto* devs = app.add_subcommand("devices", "List the devices this engine can train on (cpu, cuda:N) as one JSON document");
  // gpus: the NVIDIA GPUs NVML sees, with one telemetry reading each (docs/cuda.md "GPU telemetry")
  auto* gpus = app.add_subcommand("gpus", "List this machine's NVIDIA GPUs (NVML) with one reading each (utilization, memory, power, "
                                          "temperature, SM clock, throttle reasons) as one JSON document");

  // config reference
  bool markdown = false;
  auto* conf = app.add_subcommand("config", "Print the config reference");
  conf->add_flag("--markdown", markdown, "As the Markdown of docs/config.md");

  // the step event's field reference (engine/metrics/step_fields.h)
  bool events_markdown = false;
  auto* evs = app.add_subcommand("events", "Print the step event's fields (name, type, unit, scope, stored metric, chart) as JSON");
  evs->add_flag("--markdown", events_markdown, "As the \"Step fields\" section of docs/events.md");

  // export
  td::ExportOptions xopt;
  auto* exp = app.add_subcommand("export", "Export a checkpoint: Hugging Face GPT-2 or Llama (hf) or the engine's safetensors with a JSON sidecar");
  auto* xrun = exp->add_option("--run", xopt.run_dir, "Run directory (its newest valid checkpoint)");
  auto* xck = exp->add_option("--checkpoint", xopt.checkpoint, "One checkpoint directory (step_NNNNNNNN)");
  xrun->excludes(xck);
  exp->add_option("--format", xopt.format, "hf (transformers GPT2LMHeadModel, LlamaForCausalLM or Qwen2ForCausalLM, by model.family) or safetensors (the engine's names)")
      ->check(CLI::IsMember({"hf", "safetensors"}));
  exp->add_option("--out", xopt.out_dir, "Output directory (written atomically)")->required();
  exp->add_flag("--force", xopt.force, "Replace an existing non-empty --out that is an earlier export (never another folder)");
  exp->add_option("--data", xopt.data_dir, "Dataset directory whose tokenizer to export (default: the run's)");
  bool export_progress = false;
  exp->add_flag("--progress", export_progress,
                "For programs: print \"progress DONE TOTAL\" on stdout (flushed) before the first write and after each "
                "tensor and file written, the last with DONE = TOTAL, before the result line");

  td::cli::add_runs_command(app);

  try {
    // The `runs` subcommands do their work in CLI11 callbacks, i.e. inside parse().
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    if (*prep) return cmd_prepare(popt, progress_json);
    if (*launch) return td::dist::run_launch(lopt);
    if (*train) {
      if (!metrics_port.empty()) sets.push_back("train.metrics_port=" + metrics_port);
      if (!metrics_address.empty()) sets.push_back("train.metrics_address=" + metrics_address);
      td::RunConfig cfg = load_config(config_path, sets);
      if (*o_resume_from) {
        topt.resume = true;
        topt.resume_from = resume_from;
      }
      if (topt.resume && topt.out_dir.empty()) throw td::Error("--resume needs --out: the run directory to continue");
      if (!topt.resume && topt.run_id.empty()) topt.run_id = td::new_run_id();
      if (topt.out_dir.empty()) topt.out_dir = "runs/" + topt.run_id;
      if (peak > 0) topt.peak_flops = peak;
      topt.events_to_stdout = !no_stdout;
      td::install_stop_handlers();
      std::unique_ptr<td::cli::DbSink> sink;
      // The store records the run from rank 0's events file; the other ranks write none.
      if (!db_path.empty() && td::dist::read_dist_env().rank == 0) {
        std::string run_id = topt.run_id;
        if (topt.resume) {
          const std::string root = topt.out_dir + "/checkpoints";
          auto latest = topt.resume_from ? std::optional<std::string>(td::checkpoint_path(root, *topt.resume_from)) : td::latest_checkpoint(root);
          if (latest && td::checkpoint_problem(*latest).empty()) run_id = td::read_trainer_state(*latest).run_id;
        }
        sink = std::make_unique<td::cli::DbSink>(db_path, td::store::events_path_of(topt.out_dir), experiment, run_id,
                                                 !topt.resume);
        topt.on_event = [&] { sink->poll(); };
      }
      // The store gets the run's end in every exit path: a run that throws (a full disk at a
      // checkpoint) wrote `run_end failed` to its events file first.
      // When that write fails too (the disk is full), the sink records the end directly.
      int rc = 1;
      try {
        rc = td::run_training(cfg, topt);
      } catch (const std::exception& e) {
        if (sink) sink->finish(e.what());
        throw;
      } catch (...) {
        if (sink) sink->finish("an unknown error");
        throw;
      }
      if (sink) sink->finish();
      return rc;
    }
    if (*samp) {
      std::string dir = ckpt;
      if (!fs::exists(dir + "/trainer.json")) {
        std::vector<std::string> damaged;
        auto latest = td::latest_checkpoint(dir + "/checkpoints", &damaged);
        for (const auto& d : damaged) std::fprintf(stderr, "warning: skipped a checkpoint that does not verify: %s\n", d.c_str());
        if (!latest)
          throw td::Error("'" + ckpt + "' is neither a checkpoint nor a run directory with checkpoints" +
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
      if (!dataset.empty()) cfg.data.path = dataset;
      td::set_cpu_threads(cfg.train.threads);
      auto tok = td::Tokenizer::load(cfg.data.path);
      if (tok->vocab_size() != cfg.model.vocab_size)
        throw td::Error("the tokenizer of '" + cfg.data.path + "' has " + std::to_string(tok->vocab_size()) +
                        " tokens but the model was trained with vocab_size " + std::to_string(cfg.model.vocab_size) +
                        ": use --data with the dataset the model was trained on");
      auto be = td::make_cpu_backend();
      td::GPT model(cfg.model, *be, 1);
      td::load_checkpoint(dir, model, nullptr);
      td::Rng rng(sample_seed);
      const bool tty = ::isatty(STDOUT_FILENO);
      std::unique_ptr<StreamPrinter> printer;
      if (sample_stream) printer = std::make_unique<StreamPrinter>(*tok, prompt, tty);
      auto ids = td::generate(model, tok->encode(prompt), tok->eot_id(), sopt, rng,
                              printer ? std::function<void(uint32_t)>([&](uint32_t id) { printer->token(id); })
                                      : std::function<void(uint32_t)>());
      // The exact bytes for a pipe or a file (scripts; NULs included), escaped on a terminal:
      // an untrained byte-level model writes invalid UTF-8 and control bytes (docs/guide.md).
      std::string text = prompt + tok->decode(ids) + "\n";
      if (printer) {
        printer->finish(text);
        return 0;
      }
      if (tty) text = td::terminal_safe(text);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    if (*exp) {
      if (export_progress)
        xopt.on_progress = [](int done, int total) {
          std::printf("progress %d %d\n", done, total);
          std::fflush(stdout);
        };
      td::ExportResult r = td::export_model(xopt);
      for (const auto& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
      std::printf("exported step %d of %s as %s to %s (%zu files, %.1f MB)\n", r.step, r.checkpoint.c_str(), xopt.format.c_str(),
                  r.out_dir.c_str(), r.files.size(), r.bytes / 1e6);
      return 0;
    }
    if (*plan) {
      td::RunConfig cfg = load_config(config_path, sets);
      if (plan_tp > 0) cfg.train.tensor_parallel = plan_tp;
      const int tp = cfg.train.tensor_parallel;
      if (tp > 1 && world % tp != 0)
        throw td::ConfigError("train.tensor_parallel", "value " + std::to_string(tp) + " does not divide --world-size " + std::to_string(world) +
                                                           ": plan a world of data-parallel replicas x " + std::to_string(tp) + " ranks");
      td::Plan p = td::make_plan(cfg, world);
      bool cluster = *o_dev || *o_tok || *o_mfu || *o_dl || *o_zero || *o_prec || *o_price || *o_tp;
      std::optional<td::ClusterPlan> cp;
      if (cluster) {
        copt.world_size = world;
        copt.tensor_parallel = tp;
        if (!plan_precision.empty()) copt.precision = plan_precision == "fp32" ? td::Precision::fp32 : td::Precision::mixed;
        if (plan_price >= 0) copt.price_per_hour = plan_price;
        cp = td::make_cluster_plan(cfg, td::load_device_catalogue(plan_devices), copt);
      }
      if (plan_json) {
        auto j = td::plan_json(p);
        if (cp) j["cluster"] = td::cluster_json(*cp);
        std::printf("%s\n", j.dump(2).c_str());
      } else {
        std::printf("%s", td::plan_table(p).c_str());
        if (cp) std::printf("%s", td::cluster_table(*cp).c_str());
      }
      return 0;
    }
    if (*prof) {
      td::RunConfig cfg = load_config(config_path, sets);
      td::set_cpu_threads(cfg.train.threads);
      const td::OpProfileReport r = td::profile_training_steps(cfg, prof_steps);
      if (prof_json)
        std::printf("%s\n", td::to_json(r).dump().c_str());
      else
        std::fputs(td::format_table(r).c_str(), stdout);
      return 0;
    }
    if (*cal) {
      int threads = td::set_cpu_threads(cal_threads);
      double f = td::measure_sgemm_flops(threads, 2.0, 1536);
      td::store_peak_flops(threads, f);
      double kept = td::cached_peak_flops(threads).value_or(f);
      std::printf("sgemm with %d threads on %s (OpenBLAS kernel %s): %.1f GFLOP/s now; peak in the cache %.1f GFLOP/s (%s)\n",
                  threads, td::cpu_model().c_str(), td::blas_corename().c_str(), f / 1e9, kept / 1e9,
                  td::calibration_cache_path().c_str());
      // The engine's own share of that peak: the MFU the planner assumes before any run here.
      using R = td::EngineMfuReference;
      double share = td::measure_engine_mfu(threads, kept, 2.0);
      // Above 1 the engine beat sgemm, which it cannot: the peak was measured in a busier moment
      // than the engine's step (a machine shared with other work). Measure the peak again (the
      // cache keeps the highest) and the share against it; seen once in a suite run beside two
      // busy loops, where the share was then not stored at all.
      for (int again = 0; again < 3 && share > 1; ++again) {
        td::store_peak_flops(threads, td::measure_sgemm_flops(threads, 2.0, 1536));
        kept = td::cached_peak_flops(threads).value_or(kept);
        share = td::measure_engine_mfu(threads, kept, 2.0);
      }
      if (share > 1) {
        std::fprintf(stderr, "calibrate: the engine's step measured %.0f %% of the sgemm peak four times: this machine "
                             "is too busy to calibrate; calibrate again when it is quieter\n", share * 100);
        return 3;
      }
      td::store_engine_mfu(threads, share);
      std::printf("engine training step (reference GPT: %d layers, d_model %d, seq_len %d, micro_batch %d): MFU %.1f %% now; "
                  "in the cache %.1f %%\n",
                  R::n_layer, R::d_model, R::seq_len, R::micro_batch, share * 100, td::cached_engine_mfu(threads).value_or(share) * 100);
      return 0;
    }
    if (*devs) {
      // {"devices": [{"device": "cpu", "name", "cores"}, {"device": "cuda:N", "name",
      // "memory_bytes", "compute_capability"}, ...], "cuda_error": why there is no (further) GPU}.
      nlohmann::json list = nlohmann::json::array();
      list.push_back({{"device", "cpu"}, {"name", td::cpu_model()}, {"cores", td::cpu_cores()}});
      std::string cuda_error;
      for (int n = 0; n < 64; ++n) {
        try {
          auto be = td::make_backend("cuda:" + std::to_string(n));
          const td::DeviceInfo info = be->device_info();
          list.push_back({{"device", "cuda:" + std::to_string(n)},
                          {"name", info.name},
                          {"memory_bytes", info.memory_total},
                          {"compute_capability", info.compute_capability}});
        } catch (const std::exception& e) {
          cuda_error = e.what();  // the first ordinal that does not start: the end of the list
          break;
        }
      }
      std::printf("%s\n", nlohmann::json{{"devices", list}, {"cuda_error", cuda_error}}.dump().c_str());
      return 0;
    }
    if (*gpus) {
      // {"library": what was opened, "nvml_error": why there is no reading (null when there is),
      //  "gpus": [engine/metrics/nvml.h sample_json of each]}. Without NVML also one line on
      // stderr; exit status 0 either way (no GPU is an answer, not a failure).
      const td::nvml::Nvml nvml;
      nlohmann::json list = nlohmann::json::array();
      for (const auto& g : nvml.sample_all()) list.push_back(td::nvml::sample_json(g));
      if (!nvml.available()) std::fprintf(stderr, "%s\n", nvml.error().c_str());
      std::printf("%s\n", nlohmann::json{{"library", nvml.library()},
                                          {"nvml_error", nvml.available() ? nlohmann::json() : nlohmann::json(nvml.error())},
                                          {"gpus", list}}.dump().c_str());
      return 0;
    }
    if (*evs) {
      if (events_markdown)
        std::fputs(td::step_fields_markdown().c_str(), stdout);
      else
        std::printf("%s\n", td::step_fields_json().dump(2).c_str());
      return 0;
    }
    if (*conf) {
      if (markdown) {
        std::printf("# Run config reference\n\nGenerated by `traindeck-engine config --markdown`. A config is one JSON document with the sections\n"
                    "`model`, `train` and `data`; unknown fields are errors, and every error names the field path, the value\n"
                    "and the allowed range. Override any field on the command line with `--set section.field=value`.\n\n"
                    "`model.family` chooses the model: \"gpt2\" (the default), \"llama\" or \"qwen2\" (engine/model/family.h).\n"
                    "Fields marked *llama, qwen2 only* are errors in a gpt2 config (remove them, or set the family), so a config\n"
                    "never carries a setting that does nothing; `to_json` and the run's stored config leave them out for gpt2.\n"
                    "Every family trains, samples, evaluates, checkpoints and resumes alike (single process, data parallel,\n"
                    "every ZeRO stage, tensor parallel).\n\n"
                    "| field | default | allowed | meaning |\n|---|---|---|---|\n");
        for (const auto& f : td::config_field_docs())
          std::printf("| `%s` | `%s` | %s | %s%s |\n", f.path.c_str(), f.default_value.c_str(), f.range.c_str(),
                      f.families.empty() ? "" : ("*" + join_names(f.families) + " only.* ").c_str(), f.meaning.c_str());
      } else {
        td::RunConfig defaults;
        std::printf("%s\n", td::to_json(defaults).dump(2).c_str());
      }
      return 0;
    }
  } catch (const td::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const fs::filesystem_error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
