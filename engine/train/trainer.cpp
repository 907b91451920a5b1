#include "engine/train/trainer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "engine/checkpoint/checkpoint.h"
#include "engine/common/error.h"
#include "engine/common/rng.h"
#include "engine/data/loader.h"
#include "engine/export/export.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/events.h"
#include "engine/metrics/sysinfo.h"
#include "engine/model/gpt.h"
#include "engine/ops/blas_kernel.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "engine/plan/plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/sampler.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<int> g_signals{0};

void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {  // second signal: leave at once (only async-signal-safe calls)
    static const char msg[] =
        "\ntraindeck-engine: second signal: exiting now without a checkpoint; --resume continues from the last one\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(130);
  }
}

// Holds an exclusive lock on <out>/.lock for the life of the run, so that two trainings never
// write into one run directory (their checkpoints and events would mix).
class RunDirLock {
 public:
  explicit RunDirLock(const std::string& dir) {
    const std::string path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail_errno("cannot create the lock file", path);
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {0};
      ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fail("the run directory '" + dir + "' is in use by another traindeck-engine" +
           (n > 0 ? std::string(" (pid ") + std::string(buf, (size_t)n) + ")" : std::string()) +
           ": wait for it to end, or choose another --out");
    }
    std::string pid = std::to_string(getpid());
    if (ftruncate(fd_, 0) == 0 && pwrite(fd_, pid.data(), pid.size(), 0) < 0) { /* the pid is only informative */ }
  }
  ~RunDirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::string new_run_id() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&now));
  Rng r((uint64_t)std::chrono::steady_clock::now().time_since_epoch().count() ^ ((uint64_t)getpid() << 32));
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", (unsigned)(r.next_u64() & 0xFFFFFF));
  return std::string(buf) + "-" + suffix;
}

namespace {

json nullable(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

}  // namespace

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // the terminal went away: stop with a checkpoint, not mid-step
  // A closed stdout (a reader that went away) must not kill the run: the events file is the record.
  signal(SIGPIPE, SIG_IGN);
}
bool stop_requested() { return g_signals.load() > 0; }
void request_stop() { g_signals.fetch_add(1); }

int run_training(const RunConfig& cfg, const TrainOptions& opt) {
  const ModelConfig& mc = cfg.model;
  const TrainConfig& tc = cfg.train;
  if (tc.device != "cpu")
    throw ConfigError("train.device", "value \"" + tc.device + "\" is not available in this build: the CUDA backend is not built yet; use \"cpu\"");
  const int threads = set_cpu_threads(tc.threads);
  // --init-from: a new run from earlier weights; its shape is checked before anything is written.
  std::optional<InitSource> init;
  if (!opt.init_from.empty()) {
    if (opt.resume) fail("--init-from starts a new run from other weights; it cannot be combined with --resume");
    init = read_init_source(opt.init_from);
    const std::string why = init_mismatch(init->model, mc);
    if (!why.empty())
      fail("--init-from '" + opt.init_from + "': the model differs from the config (" + why + "); set the config's model section to the source's shape");
  }

  // The dataset must match the model before anything is written.
  int data_vocab = dataset_vocab_size(cfg.data.path);
  if (data_vocab != mc.vocab_size)
    throw ConfigError("model.vocab_size", "value " + std::to_string(mc.vocab_size) + " does not match the dataset '" + cfg.data.path +
                                              "', whose tokenizer has " + std::to_string(data_vocab) + " tokens: set model.vocab_size to " + std::to_string(data_vocab));
  auto tokenizer = Tokenizer::load(cfg.data.path);

  LoaderOptions lo;
  lo.dataset_dir = cfg.data.path;
  lo.split = "train";
  lo.seq_len = mc.seq_len;
  lo.micro_batch = tc.micro_batch;
  lo.grad_accum = tc.grad_accum;
  lo.seed = tc.seed;
  DataLoader train_loader(lo);
  std::unique_ptr<DataLoader> val_loader;
  std::string val_problem;
  if (tc.eval_interval > 0) {
    LoaderOptions vo = lo;
    vo.split = "val";
    vo.shuffle = false;
    vo.grad_accum = 1;
    try {
      val_loader = std::make_unique<DataLoader>(vo);
    } catch (const Error& e) {
      val_problem = e.what();
    }
  }

  // Run directory and state.
  std::error_code dir_ec;
  fs::create_directories(opt.out_dir, dir_ec);
  if (dir_ec || !fs::is_directory(opt.out_dir))
    fail("cannot create the run directory '" + opt.out_dir + "'" + (dir_ec ? ": " + dir_ec.message() : std::string(": a file has that name")) +
         "; choose another --out");
  RunDirLock lock(opt.out_dir);
  const std::string ckpt_root = opt.out_dir + "/checkpoints";
  const std::string events_path = opt.out_dir + "/events.jsonl";
  auto backend = make_cpu_backend();
  GPT model(mc, *backend, tc.micro_batch);
  AdamW adam(*backend, model.tensors(), model.num_params(), tc.beta1, tc.beta2, tc.eps, tc.weight_decay);

  TrainerState st;
  std::optional<int> resumed_from;
  std::vector<std::string> damaged;  // newer checkpoints skipped on resume
  std::vector<std::string> changed;  // config fields that differ from the checkpoint's
  if (opt.resume) {
    auto latest = latest_checkpoint(ckpt_root, &damaged);
    if (!latest)
      fail("nothing to resume: '" + ckpt_root + "' holds no usable checkpoint" +
           (damaged.empty() ? std::string() : " (damaged: " + damaged.front() + ")") + "; start without --resume");
    st = read_trainer_state(*latest);
    if (!opt.run_id.empty() && opt.run_id != st.run_id)
      fail("--run-id " + opt.run_id + " does not match the checkpoint's run " + st.run_id + "; omit --run-id to resume it");
    if (st.config.contains("model") && st.config["model"] != to_json(cfg)["model"])
      fail("the checkpoint in '" + *latest + "' was trained with another model shape; resume with its config (" + st.config["model"].dump() + ")");
    // Changes to train/data settings are allowed (e.g. more steps) but said out loud.
    json now = to_json(cfg);
    for (const char* sec : {"train", "data"}) {
      if (!st.config.contains(sec)) continue;
      for (auto it = now[sec].begin(); it != now[sec].end(); ++it) {
        const json& before = st.config[sec].contains(it.key()) ? st.config[sec][it.key()] : json(nullptr);
        if (before != it.value())
          changed.push_back(std::string(sec) + "." + it.key() + ": " + before.dump() + " -> " + it.value().dump());
      }
    }
    load_checkpoint(*latest, model, &adam);
    train_loader.restore(st.loader);
    st.attempt = std::max(st.attempt, last_attempt_in_events(events_path, st.run_id)) + 1;
    resumed_from = st.step;
  } else {
    if (latest_checkpoint(ckpt_root, &damaged) || !damaged.empty())
      fail("'" + opt.out_dir + "' already holds a run with checkpoints: continue it with --resume, or choose another --out");
    st.run_id = opt.run_id.empty() ? new_run_id() : opt.run_id;
    model.init_weights(tc.seed);
    if (init) {
      apply_init_source(*init, model);
      if (!opt.quiet)
        std::fprintf(stderr, "initialised from %s (%s%s)\n", init->path.c_str(), init->kind.c_str(),
                     init->step >= 0 ? (", step " + std::to_string(init->step)).c_str() : "");
      init.reset();  // the host copy of the weights is no longer needed
    }
    st.sample_rng = tc.seed ^ 0x5A5A5A5Aull;
  }
  st.config = to_json(cfg);

  std::optional<double> peak = opt.peak_flops;
  if (!peak) peak = cached_peak_flops(threads);
  if (!peak) {
    if (!opt.quiet) std::fprintf(stderr, "calibrating this CPU's sgemm peak (once; cached in %s)...\n", calibration_cache_path().c_str());
    peak = measure_sgemm_flops(threads, 2.0, 1536);
    store_peak_flops(threads, *peak);
  }

  EventWriter ev(events_path, st.run_id, st.attempt, 0, opt.events_to_stdout);
  auto emit = [&](const std::string& type, json fields) {
    ev.emit(type, std::move(fields));
    if (opt.on_event) opt.on_event();
  };
  const double fpt = flops_per_token(mc);
  emit("run_start", {{"config", st.config}, {"n_params", model.num_params()}, {"flops_per_token", fpt},
                     {"host", host_name()}, {"device", "cpu"}, {"cpu", cpu_model()}, {"blas_kernel", blas_corename()}, {"threads", threads},
                     {"world_size", 1}, {"engine_version", TD_VERSION}, {"peak_flops", nullable(peak)},
                     {"resumed_from_step", resumed_from ? json(*resumed_from) : json(nullptr)},
                     {"out_dir", fs::absolute(opt.out_dir).string()}, {"pid", (int)getpid()}});
  auto warn = [&](const std::string& code, const std::string& message, json step) {
    emit("warning", {{"step", step}, {"code", code}, {"message", message}});
    if (!opt.quiet) std::fprintf(stderr, "warning: %s\n", message.c_str());
  };
  if (!val_problem.empty()) warn("no_validation", "evaluation disabled: " + val_problem, nullptr);
  for (const auto& c : changed) warn("config_changed", "resuming with a changed setting " + c, nullptr);
  for (const auto& d : damaged)
    warn("damaged_checkpoint", "skipped a damaged checkpoint (it will be deleted at the next checkpoint): " + d, nullptr);
  if (!opt.quiet)
    std::fprintf(stderr, "run %s (attempt %d): %zu parameters, %d threads, %s\n", st.run_id.c_str(), st.attempt,
                 model.num_params(), threads, resumed_from ? ("resuming at step " + std::to_string(*resumed_from)).c_str() : "fresh start");

  const int B = tc.micro_batch, T = mc.seq_len;
  const uint64_t tokens_per_step = (uint64_t)B * T * tc.grad_accum;
  const float loss_scale = 1.0f / (float)((double)B * T * tc.grad_accum);
  std::vector<int32_t> inputs, targets;
  Rng sample_rng(st.sample_rng);
  int nonfinite_streak = 0;
  int last_ckpt_step = resumed_from ? *resumed_from : -1;

  auto checkpoint = [&]() {
    st.loader = train_loader.state();
    st.sample_rng = sample_rng.state();
    CheckpointInfo ci = save_checkpoint(ckpt_root, model, &adam, st);
    prune_checkpoints(ckpt_root, tc.keep_checkpoints);
    last_ckpt_step = st.step;
    ev.sync();
    emit("checkpoint", {{"step", st.step}, {"path", fs::absolute(ci.path).string()}, {"bytes", ci.bytes}});
  };
  auto evaluate = [&]() {
    val_loader->reset();
    double sum = 0.0;
    for (int i = 0; i < tc.eval_batches; i++) {
      val_loader->next_batch(inputs, targets);
      sum += model.forward(inputs.data(), targets.data(), B, T);
    }
    double val = sum / tc.eval_batches;
    emit("eval", {{"step", st.step}, {"val_loss", val}});
    if (!opt.quiet) std::fprintf(stderr, "step %d | val loss %.4f\n", st.step, val);
  };
  auto sample = [&]() {
    SampleOptions so{tc.sample_tokens, tc.sample_temperature, tc.sample_top_k};
    std::vector<uint32_t> prompt = tokenizer->encode(tc.sample_prompt);
    auto ids = generate(model, prompt, tokenizer->eot_id(), so, sample_rng);
    std::string text = tokenizer->decode(ids);
    emit("sample", {{"step", st.step}, {"prompt", tc.sample_prompt}, {"text", text}});
    if (!opt.quiet) std::fprintf(stderr, "---- sample at step %d ----\n%s%s\n--------\n", st.step, tc.sample_prompt.c_str(), text.c_str());
  };
  auto end_run = [&](const std::string& status, const std::string& reason) {
    emit("run_end", {{"status", status}, {"reason", reason}, {"step", st.step}});
    ev.sync();
  };

  using clk = std::chrono::steady_clock;
  try {
  while (st.step < tc.steps) {
    if (stop_requested()) {
      // A stop before the first step has nothing worth a checkpoint (nor a run to resume).
      if (last_ckpt_step != st.step && st.step > 0) checkpoint();
      end_run("stopped", "stop requested (signal)");
      if (!opt.quiet) std::fprintf(stderr, "stopped at step %d; resume with --resume\n", st.step);
      return 0;
    }
    auto t0 = clk::now();
    model.zero_grad();
    double loss_sum = 0.0;
    for (int m = 0; m < tc.grad_accum; m++) {
      train_loader.next_batch(inputs, targets);
      loss_sum += model.forward(inputs.data(), targets.data(), B, T);
      model.backward(loss_scale);
    }
    double loss = loss_sum / tc.grad_accum;
    const int step_no = st.step + 1;
    for (int s : opt.inject_nonfinite_steps)
      if (s == step_no) loss = std::nan("");
    double norm = clip_grad_norm(*backend, model.grads(), model.num_params(), tc.grad_clip);
    double lr = lr_at(st.step, tc.lr, tc.min_lr, tc.warmup, tc.steps);
    st.step = step_no;
    st.tokens_seen += tokens_per_step;
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      nonfinite_streak++;
      std::string what = !std::isfinite(loss) ? "nonfinite_loss" : "nonfinite_grad";
      emit("warning", {{"step", st.step}, {"code", what},
                       {"message", "step " + std::to_string(st.step) + " skipped: " + (what == "nonfinite_loss" ? "the loss" : "the gradient norm") +
                                       " is not finite (" + std::to_string(nonfinite_streak) + " in a row)"}});
      if (!opt.quiet) std::fprintf(stderr, "step %d skipped: non-finite %s\n", st.step, what == "nonfinite_loss" ? "loss" : "gradient norm");
      if (nonfinite_streak >= 3) {
        std::string kept = last_ckpt_step >= 0 ? " The last good checkpoint (step " + std::to_string(last_ckpt_step) + ") is kept." : "";
        end_run("failed", "3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data." + kept);
        if (!opt.quiet) std::fprintf(stderr, "run failed: 3 non-finite steps in a row.%s\n", kept.c_str());
        return 1;
      }
      continue;
    }
    nonfinite_streak = 0;
    st.adam_t++;
    adam.step(model.params(), model.grads(), lr, st.adam_t);
    double step_s = std::chrono::duration<double>(clk::now() - t0).count();
    double tps = tokens_per_step / step_s;
    std::optional<double> mfu;
    if (peak) mfu = fpt * tps / *peak;
    emit("step", {{"step", st.step}, {"tokens_seen", st.tokens_seen}, {"loss", loss}, {"lr", lr}, {"grad_norm", norm},
                  {"step_ms", step_s * 1e3}, {"tokens_per_s", tps}, {"mfu", nullable(mfu)}, {"rss_bytes", current_rss_bytes()}});
    if (!opt.quiet && (st.step % tc.log_interval == 0 || st.step == tc.steps))
      std::fprintf(stderr, "step %d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f ms | %.0f tok/s | mfu %s\n", st.step, tc.steps, loss, lr,
                   norm, step_s * 1e3, tps, mfu ? (std::to_string((int)std::lround(*mfu * 1000) / 10.0).substr(0, 4) + "%").c_str() : "n/a");
    const bool last = st.step == tc.steps;
    if (val_loader && ((tc.eval_interval > 0 && st.step % tc.eval_interval == 0) || last)) evaluate();
    if (tc.sample_interval > 0 && (st.step % tc.sample_interval == 0 || last)) sample();
    if (!last && tc.checkpoint_interval > 0 && st.step % tc.checkpoint_interval == 0) checkpoint();
    if (opt.stop_after_step > 0 && st.step == opt.stop_after_step && !last) request_stop();
  }
  if (last_ckpt_step != st.step) checkpoint();
  end_run("completed", "reached train.steps");
  } catch (const std::exception& e) {
    // Say so in the events before leaving (best effort: the error may be a full disk).
    try {
      end_run("failed", e.what());
    } catch (const std::exception&) {
    }
    throw;
  }
  return 0;
}

}  // namespace td
