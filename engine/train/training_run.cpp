// TrainingRun's phases (engine/train/training_run.h): setup, resume, run_start, the step loop,
// checkpoint, evaluate, sample, end_run. run_training (trainer.h) runs one.
#include "engine/train/training_run.h"

#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/common/duration.h"
#include "engine/common/run_id.h"
#include "engine/metrics/prometheus.h"
#include "engine/metrics/run_start_fields.h"
#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/common/rng.h"
#include "engine/data/loader.h"
#include "engine/data/manifest.h"
#include "engine/dist/communicator.h"
#include "engine/dist/groups.h"
#include "engine/export/export.h"
#include "engine/metrics/alerts.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/step_fields.h"
#include "engine/metrics/events.h"
#include "engine/metrics/nvml.h"
#include "engine/metrics/sysinfo.h"
#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/ops/blas_kernel.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "engine/plan/devices.h"
#include "engine/plan/plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/sampler.h"
#include "engine/train/parallel_state.h"
#include "engine/train/step_figures.h"
#include "engine/train/step_rate.h"
#include "engine/model/tensor_parallel.h"
#include "engine/train/tp_run.h"
#include "engine/train/zero.h"

namespace td::train_detail {

namespace fs = std::filesystem;

void TrainingRun::setup() {
  fix_malloc_mmap_threshold();
  on_gpu_ = tc_.device != "cpu";
  // Several GPU ranks: one GPU each. "cuda" means cuda:LOCAL_RANK (torchrun's convention), so the
  // ranks of a node take its GPUs in order; "cuda:N" is kept only with one rank per node.
  device_ = tc_.device;
  if (on_gpu_ && denv_.distributed()) {
    if (tc_.device == "cuda") device_ = "cuda:" + std::to_string(denv_.local_rank);
    else if (denv_.local_world_size > 1)
      throw ConfigError("train.device", "value \"" + tc_.device + "\" would put the " + std::to_string(denv_.local_world_size) +
                                            " ranks of this node on one GPU; use \"cuda\": rank r then trains on cuda:TRAINDECK_LOCAL_RANK");
  }
  // Tensor parallelism (engine/model/tensor_parallel.h, docs/distributed.md): world = dp x tp;
  // the data loader reads by data-parallel rank (the ranks of one TP group see the same tokens).
  tp_ = tc_.tensor_parallel;
  // The model's divisibility, checked here (and by the designer) rather than by the config
  // parser, whose fuzz targets build config.cpp alone: said before anything is written.
  if (const std::string why = tp_config_problem(mc_, tp_, tc_.precision); !why.empty()) throw ConfigError("train.tensor_parallel", why);
  if (tp_ > 1 && denv_.world_size % tp_ != 0)
    throw ConfigError("train.tensor_parallel", "value " + std::to_string(tp_) + " does not divide the world size " +
                                                   std::to_string(denv_.world_size) + ": start a multiple of " + std::to_string(tp_) + " ranks");
  act_dtype_ = resolved_precision(tc_) == "bf16" ? DType::kBF16 : DType::kF32;
  if (tc_.zero == 1 && !denv_.distributed() && !opt_.quiet)
    std::fprintf(stderr, "note: train.zero = 1 with one rank shards nothing (the run equals train.zero = 0)\n");
  // Ranks sharing this machine share its cores: train.threads = 0 means cores / local ranks.
  threads_ = set_cpu_threads(tc_.threads > 0 ? tc_.threads : dist::default_threads(denv_));
  // --init-from: a new run from earlier weights; its shape is checked before anything is written.
  // Rank 0 alone reads it (the others need no copy): its weights reach them by broadcast.
  if (!opt_.init_from.empty()) {
    if (opt_.resume) fail("--init-from starts a new run from other weights; it cannot be combined with --resume");
    if (denv_.rank == 0) {
      init_ = read_init_source(opt_.init_from);
      const std::string why = init_mismatch(init_->model, mc_);
      if (!why.empty())
        fail("--init-from '" + opt_.init_from + "': the model differs from the config (" + why +
             "); set the config's model section to the source's shape");
    }
  }

  // The dataset must match the model before anything is written.
  int data_vocab = dataset_vocab_size(cfg_.data.path);
  if (data_vocab != mc_.vocab_size)
    throw ConfigError("model.vocab_size", "value " + std::to_string(mc_.vocab_size) + " does not match the dataset '" + cfg_.data.path +
                                              "', whose tokenizer has " + std::to_string(data_vocab) +
                                              " tokens: set model.vocab_size to " + std::to_string(data_vocab));
  tokenizer_ = Tokenizer::load(cfg_.data.path);

  LoaderOptions lo;
  lo.dataset_dir = cfg_.data.path;
  lo.split = "train";
  lo.seq_len = mc_.seq_len;
  lo.micro_batch = tc_.micro_batch;
  lo.grad_accum = tc_.grad_accum;
  lo.seed = tc_.seed;
  lo.rank = denv_.rank / tp_;  // dist::make_parallel_groups: dp_rank = rank / tp
  lo.world_size = denv_.world_size / tp_;
  train_loader_ = std::make_unique<DataLoader>(lo);
  if (tc_.eval_interval > 0) {
    LoaderOptions vo = lo;
    vo.split = "val";
    vo.shuffle = false;
    vo.grad_accum = 1;
    try {
      val_loader_ = std::make_unique<DataLoader>(vo);
    } catch (const Error& e) {
      val_problem_ = e.what();
    }
  }

  // The backend first: an NCCL communicator works on its GPU and stream (and is destroyed
  // before it, being declared after it).
  try {
    backend_ = make_backend(device_);
  } catch (const Error& e) {
    if (!on_gpu_ || !denv_.distributed()) throw;
    const std::string what = e.what();
    // "cuda:3 asked for but this machine has 2 GPUs": more ranks on this node than GPUs.
    const bool ordinal = what.find("asked for but") != std::string::npos;
    fail(what + " (rank " + std::to_string(denv_.rank) + ": TRAINDECK_LOCAL_RANK=" + std::to_string(denv_.local_rank) + " selects " +
         device_ + (ordinal ? "; start at most one rank per GPU on each node)" : ")"));
  }
  dev_ = backend_->device_info();
  // GPU telemetry (engine/metrics/nvml.h, docs/cuda.md "GPU telemetry"): this rank's GPU through
  // NVML, opened for a GPU run (or where TRAINDECK_NVML_DEVICE names a GPU); without a driver
  // the step events simply have no gpu_util_pct ... fields.
  if (const char* nd = std::getenv(nvml::kDeviceEnv); on_gpu_ || (nd && *nd)) {
    nvml_lib_ = std::make_unique<nvml::Nvml>();
    nvml_gpu_ = nvml::telemetry_device(*nvml_lib_, device_, nd, std::getenv("CUDA_VISIBLE_DEVICES"), dev_.pci_bus_id);
    if (!nvml_gpu_ && !opt_.quiet)
      std::fprintf(stderr, "note: no GPU telemetry for %s: %s\n", device_.c_str(),
                   nvml_lib_->available() ? "NVML does not list its GPU (see docs/cuda.md, GPU telemetry)" : nvml_lib_->error().c_str());
  }

  // The other ranks (engine/dist): a rendezvous at rank 0's store, then Gloo between CPU ranks
  // or NCCL between GPU ranks. NCCL's collectives are enqueued on the backend's own stream, so
  // they are ordered with the kernels before and after them with nothing to do here; host
  // buffers (the small exchanges below: flags, losses, figures) go through NCCL too, staged
  // through device memory by the communicator (one communicator, one rendezvous, no Gloo
  // beside NCCL).
  comm_ = dist::make_communicator(denv_, {tc_.dist_timeout_s, tc_.dist_ifname}, backend_.get());
  world_ = comm_->world_size();
  rank_ = comm_->rank();
  rank0_ = rank_ == 0;
  // Tensor parallelism: the TP group's collectives run inside the model; the gradients are
  // averaged over the DP group (the replicas of this rank's shard: ParallelState).
  if (tp_ > 1) {
    groups_ = dist::make_parallel_groups(*comm_, tp_);
    tp_model_ = std::make_unique<GroupTensorParallel>(*groups_.tp);
  }
  dp_ = (tp_ > 1 ? *groups_.dp : *comm_).world_size();
  // ZeRO-3's gathered weights have no bf16 copy (engine/train/zero.h); said before the model is built.
  if (tc_.zero == 3 && dp_ > 1 && act_dtype_ != DType::kF32)
    throw ConfigError("train.zero", "value 3 trains in fp32 only for now (its gathered weights have no bf16 copy); set train.precision "
                                    "to \"fp32\" or use train.zero = 2");

  ckpt_root_ = opt_.out_dir + "/checkpoints";
  events_path_ = opt_.out_dir + "/events.jsonl";
  try {
    model_ = std::make_unique<GPT>(mc_, *backend_, tc_.micro_batch, act_dtype_, tp_model_.get(), parse_attention_kernel(tc_.attention),
                                   parse_gelu_fusion(tc_.gelu_fusion));
  } catch (const Error& e) {
    if (!on_gpu_) throw;
    // Out of GPU memory (or another allocation failure): say what the config needs.
    const Plan need = make_plan(cfg_, 1);
    fail(std::string(e.what()) + "\n  the planner estimates " + std::to_string(need.total_bytes >> 20) + " MiB for this config (weights " +
         std::to_string(need.weights_bytes >> 20) + ", gradients " + std::to_string(need.grads_bytes >> 20) + ", AdamW " +
         std::to_string(need.optimizer_bytes >> 20) + ", activations " + std::to_string(need.activations_bytes >> 20) + " MiB) on " +
         dev_.name + " with " + std::to_string(dev_.memory_total >> 20) + " MiB; see `traindeck-engine plan`");
  }
  // Who holds which weights, gradients and moments, and what a step does with them
  // (engine/train/parallel_state.h): all-reduce, ZeRO-1/2/3, tensor parallelism.
  ps_ = std::make_unique<ParallelState>(*model_, *backend_, *comm_, groups_, mc_, tc_);
}

void TrainingRun::resume() {
  ParallelState& ps = *ps_;
  TrainerState& st = st_;
  std::string rank0_error;
  if (rank0_) {
    try {
      // New run folders (and parents) are owner-only, as the files in them (docs/formats.md).
      const std::error_code dir_ec = create_private_dirs(opt_.out_dir);
      if (dir_ec || !fs::is_directory(opt_.out_dir))
        fail("cannot create the run directory '" + opt_.out_dir + "'" +
             (dir_ec && dir_ec != std::errc::not_a_directory ? ": " + dir_ec.message() : std::string(": a file has that name")) +
             "; choose another --out");
      lock_ = std::make_unique<RunDirLock>(opt_.out_dir);
      // The events file is opened later (EventWriter, O_NOFOLLOW); a link there is refused now,
      // before a checkpoint is read or anything is written.
      if (std::error_code lec; fs::exists(fs::symlink_status(events_path_, lec)))
        ::close(open_private_file(events_path_, O_RDONLY, "the run's events file"));
      refuse_linked_checkpoint_root(ckpt_root_);
      if (opt_.resume || opt_.resume_from) {
        std::optional<std::string> latest;
        if (opt_.resume_from) {
          latest = checkpoint_from_step(ckpt_root_, *opt_.resume_from);
        } else {
          latest = latest_checkpoint(ckpt_root_, &damaged_);
          if (!latest)
            fail("nothing to resume: '" + ckpt_root_ + "' holds no checkpoint that verifies" +
                 (damaged_.empty() ? std::string() : " (damaged: " + damaged_.front() + ")") + "; start without --resume");
        }
        unverified_ = checkpoint_note(*latest);
        st = read_trainer_state(*latest);
        if (!opt_.run_id.empty() && opt_.run_id != st.run_id)
          fail("--run-id " + opt_.run_id + " does not match the checkpoint's run " + st.run_id + "; omit --run-id to resume it");
        if (st.config.contains("model") && st.config["model"] != to_json(cfg_)["model"])
          fail("the checkpoint in '" + *latest + "' was trained with another model shape; resume with its config (" +
               st.config["model"].dump() + ")");
        // Changes to train/data settings are allowed (e.g. more steps) but said out loud.
        json now = to_json(cfg_);
        for (const char* sec : {"train", "data"}) {
          if (!st.config.contains(sec)) continue;
          for (auto it = now[sec].begin(); it != now[sec].end(); ++it) {
            const json& before = st.config[sec].contains(it.key()) ? st.config[sec][it.key()] : json(nullptr);
            if (before != it.value()) changed_.push_back(std::string(sec) + "." + it.key() + ": " + before.dump() + " -> " + it.value().dump());
          }
        }
        ps.load_checkpoint_rank0(*latest);
        // The attempt comes from the run's own state, checked: it never wraps (docs/events.md).
        if (st.attempt < 0 || st.attempt >= kMaxAttempt)
          fail("'" + *latest + "/trainer.json' gives attempt " + std::to_string(st.attempt) + ", outside 0.." +
               std::to_string(kMaxAttempt - 1) + ": the file is damaged; move that checkpoint away to resume from an earlier one");
        st.attempt = std::max(st.attempt, last_attempt_in_events(events_path_, st.run_id)) + 1;
        if (st.attempt > kMaxAttempt)
          fail("run " + st.run_id + " has had " + std::to_string(kMaxAttempt) + " attempts, the most an events file counts; "
               "start a new run from its weights with --init-from " + *latest);
        resumed_from_ = st.step;
        if (opt_.resume_from) set_aside_ = set_aside_newer(ckpt_root_, st.step, st.attempt);
      } else {
        if (latest_checkpoint(ckpt_root_, &damaged_) || !damaged_.empty())
          fail("'" + opt_.out_dir + "' already holds a run with checkpoints: continue it with --resume, or choose another --out");
        st.run_id = opt_.run_id.empty() ? new_run_id() : opt_.run_id;
        model_->init_weights(tc_.seed);
        if (init_) {
          ps.init_from_rank0(*init_);
          if (!opt_.quiet)
            std::fprintf(stderr, "initialised from %s (%s%s)\n", init_->path.c_str(), init_->kind.c_str(),
                         init_->step >= 0 ? (", step " + std::to_string(init_->step)).c_str() : "");
          if (init_->kind == "checkpoint") unverified_ = checkpoint_note(init_->path);
          init_.reset();  // the host copy of the weights is no longer needed
        }
        st.sample_rng = tc_.seed ^ 0x5A5A5A5Aull;
      }
    } catch (const Error& e) {
      if (world_ == 1) throw;
      rank0_error = e.what();
    }
  }
  if (world_ > 1) {
    // Rank 0's decision (or its error) and state reach every rank; then the parameters and the
    // optimizer state, so that every rank starts from the same values bit for bit.
    json decision =
        rank0_error.empty() ? json{{"state", st.to_json()}, {"resumed", resumed_from_.has_value()}} : json{{"error", rank0_error}};
    decision = json::parse(comm_->broadcast_string(rank0_ ? decision.dump() : std::string(), 0));
    if (decision.contains("error")) {
      if (rank0_) fail(rank0_error);
      fail("rank 0 could not start the run: " + decision["error"].get<std::string>());
    }
    if (!rank0_) {
      st = TrainerState::from_json(decision["state"]);
      if (decision["resumed"].get<bool>()) resumed_from_ = st.step;
    }
  }
  // The weights (and a resume's moments) from rank 0 to every rank, each keeping its part.
  ps.distribute(resumed_from_.has_value(), !opt_.init_from.empty());
  if (resumed_from_) train_loader_->restore(st.loader);
  st.config = to_json(cfg_);
}

void TrainingRun::run_start() {
  TrainerState& st = st_;
  peak_ = opt_.peak_flops;
  if (on_gpu_ && !peak_) {
    // A GPU's dense peak at the precision trained, from the device catalogue; unknown: no MFU.
    if (const Device* d = find_cuda_device(load_device_catalogue(), dev_.name, dev_.memory_total))
      peak_ = act_dtype_ == DType::kBF16 ? d->peak(Precision::mixed) : d->peak(Precision::fp32);
  }
  if (rank0_ && !peak_ && !on_gpu_) peak_ = cached_peak_flops(threads_);
  if (rank0_ && !peak_ && !on_gpu_) {
    if (!opt_.quiet) std::fprintf(stderr, "calibrating this CPU's sgemm peak (once; cached in %s)...\n", calibration_cache_path().c_str());
    peak_ = measure_sgemm_flops(threads_, 2.0, 1536);
    store_peak_flops(threads_, *peak_);
  }

  if (rank0_) ev_ = std::make_unique<EventWriter>(events_path_, st.run_id, st.attempt, 0, opt_.events_to_stdout);
  // Rank 0 serves the run's figures to Prometheus (train --metrics-port); run_start says where.
  if (rank0_ && tc_.metrics_port >= 0)
    prom_ = std::make_unique<MetricsServer>(tc_.metrics_address, tc_.metrics_port,
                                            std::vector<std::pair<std::string, std::string>>{{"run_id", st.run_id}, {"host", host_name()}});
  quiet_ = opt_.quiet || !rank0_;
  fpt_ = flops_per_token(mc_);
  GPT& model = *model_;
  // Every field by the one table (engine/metrics/run_start_fields.h): run_start_key is checked
  // at compile time, so the store and docs/events.md know each field written here.
  json start = json::object();
  auto put = [&](const char* key, json value) { start[key] = std::move(value); };
  put(run_start_key("config"), st.config);
  put(run_start_key("n_params"), tp_ > 1 ? model_num_params(mc_) : model.num_params());
  put(run_start_key("flops_per_token"), fpt_);
  put(run_start_key("host"), host_name());
  put(run_start_key("device"), device_);
  put(run_start_key("device_name"), on_gpu_ ? dev_.name : cpu_model());
  put(run_start_key("precision"), resolved_precision(tc_));
  put(run_start_key("attention"), tc_.attention);
  put(run_start_key("gelu_fusion"), gelu_fusion_name(model.gelu_fusion()));
  put(run_start_key("cpu"), cpu_model());
  put(run_start_key("blas_kernel"), blas_corename());
  put(run_start_key("threads"), threads_);
  put(run_start_key("world_size"), world_);
  put(run_start_key("engine_version"), TD_VERSION);
  put(run_start_key("engine_build"), engine_build());
  put(run_start_key("peak_flops"), nullable(peak_));
  put(run_start_key("resumed_from_step"), resumed_from_ ? json(*resumed_from_) : json(nullptr));
  put(run_start_key("out_dir"), fs::absolute(opt_.out_dir).string());
  put(run_start_key("pid"), (int)getpid());
  if (world_ > 1) put(run_start_key("hosts"), comm_->hosts());
  put(run_start_key("dataset"), dataset_facts(cfg_.data.path));
  if (!opt_.run_name.empty()) put(run_start_key("name"), opt_.run_name);
  if (prom_) put(run_start_key("metrics_url"), prom_->url());
  if (on_gpu_) {
    put(run_start_key("compute_capability"), std::to_string(dev_.compute_capability / 10) + "." + std::to_string(dev_.compute_capability % 10));
    put(run_start_key("gpu_memory_total"), dev_.memory_total);
    // Free device memory before the model's buffers (cudaMemGetInfo; omitted when unreadable).
    if (dev_.memory_free > 0) put(run_start_key("gpu_memory_free"), dev_.memory_free);
  }
  emit("run_start", start);
  if (!val_problem_.empty()) warn("no_validation", "evaluation disabled: " + val_problem_, nullptr);
  for (const auto& c : changed_) warn("config_changed", "resuming with a changed setting " + c, nullptr);
  for (const auto& d : damaged_)
    warn("damaged_checkpoint", "skipped a damaged checkpoint (it will be deleted at the next checkpoint): " + d, nullptr);
  if (!set_aside_.empty()) {
    std::string names;
    for (const auto& a : set_aside_) names += (names.empty() ? "" : ", ") + a;
    warn("checkpoints_set_aside", "--resume-from " + std::to_string(*resumed_from_) +
                                      ": the newer checkpoints were renamed out of the way (delete them when not needed): " + names,
         nullptr);
  }
  if (!unverified_.empty()) warn("unverified_checkpoint", (resumed_from_ ? "resuming from " : "initialised from ") + unverified_, nullptr);
  if (!quiet_)
    std::fprintf(stderr, "run %s (attempt %d): %zu parameters%s, %d threads%s, %s\n", st.run_id.c_str(), st.attempt,
                 model_num_params(mc_), tp_ > 1 ? (" (" + std::to_string(model.num_params()) + " on this rank)").c_str() : "", threads_,
                 world_ > 1 ? (" per rank, " + std::to_string(world_) + " ranks (" + comm_->backend() + ps_->zero_label() +
                               (tp_ > 1 ? ", tensor parallel " + std::to_string(tp_) + " x data parallel " + std::to_string(dp_) : std::string()) +
                               ")").c_str()
                            : "",
                 resumed_from_ ? ("resuming at step " + std::to_string(*resumed_from_)).c_str() : "fresh start");

  B_ = tc_.micro_batch;
  T_ = mc_.seq_len;
  // The global batch: each data-parallel replica's (a TP group's ranks share their tokens).
  tokens_per_step_ = (uint64_t)B_ * T_ * tc_.grad_accum * dp_;
  loss_scale_ = 1.0f / (float)((double)B_ * T_ * tc_.grad_accum * dp_);
  sample_rng_ = Rng(st.sample_rng);
  last_ckpt_step_ = resumed_from_ ? *resumed_from_ : -1;
  if (!opt_.window_log.empty())
    window_log_ = std::make_unique<std::ofstream>(opt_.window_log + "." + std::to_string(rank_), std::ios::app);
}

int TrainingRun::train() {
  train_t0_ = clk::now();
  while (st_.step < tc_.steps) {
    const StepStart s{clk::now(), process_cpu_seconds(), ps_->comm_stats()};
    if (const std::string why = agreed_stop(); !why.empty()) {
      // A stop before the first step has nothing worth a checkpoint (nor a run to resume).
      if (last_ckpt_step_ != st_.step && st_.step > 0) checkpoint();
      end_run("stopped", why);
      if (!quiet_) std::fprintf(stderr, "stopped at step %d (%s); resume with --resume\n", st_.step, why.c_str());
      return 0;
    }
    const StepResult r = step(s);
    if (r == StepResult::kFailed) return 1;
    if (r == StepResult::kSkipped) continue;
    const bool last = st_.step == tc_.steps;
    if (val_loader_ && ((tc_.eval_interval > 0 && st_.step % tc_.eval_interval == 0) || last)) evaluate();
    if (tc_.sample_interval > 0 && (st_.step % tc_.sample_interval == 0 || last)) sample();
    if (!last && tc_.checkpoint_interval > 0 && st_.step % tc_.checkpoint_interval == 0) checkpoint();
    if (opt_.stop_after_step > 0 && st_.step == opt_.stop_after_step && !last) request_stop();
  }
  if (last_ckpt_step_ != st_.step) checkpoint();
  end_run("completed", "reached train.steps");
  return 0;
}

TrainingRun::StepResult TrainingRun::step(const StepStart& s) {
  TrainerState& st = st_;
  ParallelState& ps = *ps_;
  GPT& model = *model_;
  const int B = B_, T = T_;
  ps.begin_step();
  model.zero_grad();
  double loss_sum = 0.0;
  const LoaderStats data0 = train_loader_->stats();
  for (int m = 0; m < tc_.grad_accum; m++) {
    if (window_log_)
      *window_log_ << json{{"step", st.step + 1}, {"rank", rank_}, {"micro", m}, {"windows", train_loader_->peek_window_ids()}}.dump() << "\n";
    train_loader_->next_batch(inputs_, targets_);
    loss_sum += model.forward(inputs_.data(), targets_.data(), B, T, loss_scale_);  // fused classifier
    model.backward(loss_scale_);
  }
  const LoaderStats data1 = train_loader_->stats();
  const double data_wait_s = data1.wait_seconds - data0.wait_seconds, data_read_s = data1.read_seconds - data0.read_seconds;
  const uint64_t data_bytes = data1.bytes_read - data0.bytes_read;
  // Every rank's mean loss, averaged in rank order (exact doubles, the same on every rank).
  double loss = all_sum_double(*comm_, loss_sum / tc_.grad_accum) / world_;
  const int step_no = st.step + 1;
  for (int i : opt_.inject_nonfinite_steps)
    if (i == step_no) loss = std::nan("");
  for (int i : opt_.inject_loss_spike_steps)
    if (i == step_no) loss *= 10;  // testing: the step reports ten times its loss (the update is unchanged)
  const double norm = ps.reduce_and_clip();  // collective: gradients summed, global norm, clip
  double lr = lr_at(st.step, tc_.lr, tc_.min_lr, tc_.warmup, tc_.steps);
  st.step = step_no;
  st.tokens_seen += tokens_per_step_;
  if (!std::isfinite(loss) || !std::isfinite(norm)) {
    const double step_s_nan = std::nan("");  // a skipped step has no time nor throughput for the alerts
    nonfinite_streak_++;
    std::string what = !std::isfinite(loss) ? "nonfinite_loss" : "nonfinite_grad";
    emit("warning", {{"step", st.step}, {"code", what},
                     {"message", "step " + std::to_string(st.step) + " skipped: " + (what == "nonfinite_loss" ? "the loss" : "the gradient norm") +
                                     " is not finite (" + std::to_string(nonfinite_streak_) + " in a row)"}});
    if (!quiet_) std::fprintf(stderr, "step %d skipped: non-finite %s\n", st.step, what == "nonfinite_loss" ? "loss" : "gradient norm");
    for (const auto& a : alert_ev_.on_step(st.step, loss, norm, step_s_nan, step_s_nan)) emit_alert(a);
    if (nonfinite_streak_ >= 3) {
      std::string kept = rank0_ ? newest_verified_note(ckpt_root_) : std::string();
      end_run("failed", "3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data." + kept);
      if (!quiet_) std::fprintf(stderr, "run failed: 3 non-finite steps in a row.%s\n", kept.c_str());
      return StepResult::kFailed;
    }
    return StepResult::kSkipped;
  }
  nonfinite_streak_ = 0;
  st.adam_t++;
  ps.optimizer_step(lr, st.adam_t);
  if (opt_.inject_nonfinite_weights_step == st.step && model.params()) {  // testing: an update that diverged
    const float nan = std::nanf("");
    backend_->upload(model.params(), &nan, sizeof nan);
  }
  backend_->synchronize();  // a GPU step ends when its last kernel has run, not when it was queued
  double step_s = std::chrono::duration<double>(clk::now() - s.t0).count();
  // top's %CPU of this process over the step (docs/events.md cpu_util_pct).
  const double cpu_pct = 100 * (process_cpu_seconds() - s.cpu0) / step_s;
  double tps = tokens_per_step_ / step_s;
  std::optional<double> mfu;
  if (peak_) mfu = fpt_ * tps / (*peak_ * world_);
  // The step event, by the one field table (engine/metrics/step_fields.h, docs/events.md).
  StepFigures fig;
  fig.set(step_field("step"), st.step);
  fig.set(step_field("tokens_seen"), (double)st.tokens_seen);
  fig.set(step_field("loss"), loss);
  fig.set(step_field("lr"), lr);
  fig.set(step_field("grad_norm"), norm);
  fig.set(step_field("step_ms"), step_s * 1e3);
  fig.set(step_field("tokens_per_s"), tps);
  fig.set(step_field("mfu"), mfu);
  fig.set(step_field("rss_bytes"), (double)current_rss_bytes());
  fig.set(step_field("cpu_util_pct"), cpu_pct);
  fig.set(step_field("data_wait_ms"), data_wait_s * 1e3);
  fig.set(step_field("data_wait_pct"), 100 * data_wait_s / step_s);
  fig.set(step_field("data_read_bytes"), (double)data_bytes);
  fig.set(step_field("data_read_mb_s"), data_read_s > 0 ? std::optional<double>(data_bytes / data_read_s * 1e-6) : std::nullopt);
  if (on_gpu_) {
    const DeviceInfo now = backend_->device_info();
    fig.set(step_field("gpu_mem_bytes"), (double)now.memory_allocated);
    fig.set(step_field("gpu_mem_peak_bytes"), (double)now.memory_peak);
  }
  const std::optional<nvml::GpuSample> gpu = read_gpu();
  if (gpu) set_gpu_figures(fig, FieldScope::Global, *gpu);
  std::vector<StepFigures> rank_figs;
  if (world_ > 1) {
    // Per-rank figures of this step (collectives since its start), gathered to every rank:
    // this rank's figures, then every rank's (all_gather_rank_figures).
    StepFigures mine;
    if (gpu) set_gpu_figures(mine, FieldScope::Rank, *gpu);
    mine.set(rank_field("tokens_per_s"), (double)tokens_per_step_ / dp_ / step_s);
    const double comm_s = set_comm_figures(mine, s.c0, ps.comm_stats());
    mine.set(rank_field("rss_bytes"), (double)current_rss_bytes());
    mine.set(rank_field("data_wait_ms"), data_wait_s * 1e3);
    mine.set(rank_field("cpu_util_pct"), cpu_pct);
    mine.set(rank_field("step_ms"), step_s * 1e3);
    mine.set(rank_field("compute_ms"), std::max(0.0, step_s - comm_s) * 1e3);
    rank_figs = all_gather_rank_figures(*comm_, mine);
  }
  json fields = step_event_json(fig, rank_figs, world_ > 1 ? comm_->hosts() : std::vector<std::string>{});
  if (gpu && gpu->throttle_reasons) fields["gpu_throttle_reasons"] = nvml::throttle_reason_names(*gpu->throttle_reasons);
  emit("step", std::move(fields));
  for (const auto& a : alert_ev_.on_step(st.step, loss, norm, step_s, tps)) emit_alert(a);
  if (st.step % 50 == 0 || st.step == (resumed_from_ ? *resumed_from_ : 0) + 1) check_disk();
  const double since_start = std::chrono::duration<double>(clk::now() - train_t0_).count();
  rate_.add(st.step, since_start);
  if (!quiet_ && (st.step % tc_.log_interval == 0 || st.step == tc_.steps)) {
    const auto left = rate_.seconds_left(tc_.steps);
    std::fprintf(stderr, "step %d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f ms | %.0f tok/s | mfu %s | %s elapsed | %s left\n", st.step,
                 tc_.steps, loss, lr, norm, step_s * 1e3, tps,
                 mfu ? (std::to_string((int)std::lround(*mfu * 1000) / 10.0).substr(0, 4) + "%").c_str() : "n/a",
                 format_duration(since_start).c_str(), left ? ("~" + format_duration(*left)).c_str() : "?");
  }
  return StepResult::kTrained;
}

void TrainingRun::checkpoint() {
  const auto pause_t0 = clk::now();  // training stands still from here
  ps_->gather_checkpoint();  // collective: the sharded state to full size where it is written
  last_ckpt_step_ = st_.step;
  if (!rank0_) return ps_->follow_checkpoint_write();  // tensor parallelism: collective with rank 0's write
  st_.loader = train_loader_->state();
  st_.sample_rng = sample_rng_.state();
  const auto write_t0 = clk::now();
  CheckpointInfo ci = ps_->write_checkpoint(ckpt_root_, st_);
  const double write_s = std::chrono::duration<double>(clk::now() - write_t0).count();
  if (!ci.problem.empty())
    warn("damaged_checkpoint", "the checkpoint just written does not verify and is deleted (older ones are kept): " + ci.path + ": " + ci.problem,
         st_.step);
  prune_checkpoints(ckpt_root_, tc_.keep_checkpoints);
  check_disk();
  ev_->sync();
  // The checkpoint event, by the field table (engine/metrics/step_fields.h).
  StepFigures cf;
  cf.set(checkpoint_field("step"), st_.step);
  cf.set(checkpoint_field("bytes"), (double)ci.bytes);
  cf.set(checkpoint_field("write_s"), write_s);
  cf.set(checkpoint_field("write_mb_s"), write_s > 0 ? std::optional<double>(ci.bytes / write_s * 1e-6) : std::nullopt);
  cf.set(checkpoint_field("pause_s"), std::chrono::duration<double>(clk::now() - pause_t0).count());
  json ck = event_figures_json(EventKind::Checkpoint, cf);
  ck["path"] = fs::absolute(ci.path).string();
  emit("checkpoint", std::move(ck));
}

void TrainingRun::evaluate() {
  val_loader_->reset();
  double sum = 0.0;
  for (int i = 0; i < tc_.eval_batches; i++) {
    val_loader_->next_batch(inputs_, targets_);
    sum += model_->forward(inputs_.data(), targets_.data(), B_, T_);
  }
  // Each rank evaluated its slice of the same batches: the mean over ranks is the global mean.
  double val = all_sum_double(*comm_, sum / tc_.eval_batches) / world_;
  emit("eval", {{"step", st_.step}, {"val_loss", val}});
  if (!quiet_) std::fprintf(stderr, "step %d | val loss %.4f\n", st_.step, val);
}

void TrainingRun::sample() {
  // ZeRO-3: every rank generates in step (each forward all-gathers the weights; the same
  // weights, prompt and sampling state give the same tokens); rank 0 alone reports.
  if (!rank0_ && !ps_->zero3() && tp_ == 1) return;  // tensor parallelism: every forward is collective too
  SampleOptions so{tc_.sample_tokens, tc_.sample_temperature, tc_.sample_top_k};
  std::vector<uint32_t> prompt = tokenizer_->encode(tc_.sample_prompt);
  auto ids = generate(*model_, prompt, tokenizer_->eot_id(), so, sample_rng_);
  std::string text = tokenizer_->decode(ids);
  if (!rank0_) return;
  emit("sample", {{"step", st_.step}, {"prompt", tc_.sample_prompt}, {"text", text}});
  // stderr is for people (a terminal, engine.log, "2>&1 | tee"): escaped always; the event
  // above keeps the exact text.
  if (!quiet_)
    std::fprintf(stderr, "---- sample at step %d ----\n%s\n--------\n", st_.step, terminal_safe(tc_.sample_prompt + text).c_str());
}

void TrainingRun::end_run(const std::string& status, const std::string& reason) {
  emit("run_end", {{"status", status}, {"reason", reason}, {"step", st_.step}});
  if (ev_) ev_->sync();
}

// One stop decision for all ranks: any rank's request stops every rank at this boundary.
// Returns "" (go on), or the run_end reason: "time limit" when ranks got only the
// scheduler's warning (SIGUSR1), else "stop requested (signal)" (a person's or the system's
// stop wins: a job that was both stopped and near its limit must not be continued).
std::string TrainingRun::agreed_stop() {
  const float other = stop_signal_received() ? 1.0f : 0.0f, limit = time_limit_requested() ? 1.0f : 0.0f;
  float f[2] = {other, limit};
  if (world_ > 1) comm_->all_reduce(f, 2, dist::ReduceOp::sum);
  if (f[0] > 0) return "stop requested (signal)";
  if (f[1] > 0) return "time limit";
  return "";
}

void TrainingRun::emit(const std::string& type, json fields) {
  if (prom_) prom_->observe(type, fields);
  if (!ev_) return;  // rank 0 alone writes the run's events
  ev_->emit(type, std::move(fields));
  if (opt_.on_event) opt_.on_event();
}

void TrainingRun::warn(const std::string& code, const std::string& message, json step) {
  emit("warning", {{"step", step}, {"code", code}, {"message", message}});
  if (!quiet_) std::fprintf(stderr, "warning: %s\n", message.c_str());
}

json TrainingRun::alert_json(const alerts::Alert& a) {
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  return json{{"kind", std::string(alerts::kind_name(a.kind))}, {"severity", std::string(alerts::severity_name(a.severity))},
              {"message", a.message}, {"step", a.step}, {"value", num(a.value)}, {"threshold", num(a.threshold)}};
}

// A collective that failed because a peer rank died or froze (dist::CollectiveError): the
// rank_lost alert, naming the ranks and hosts the rendezvous store found at fault (`ranks`,
// `hosts`), with the run's end reason, before the run_end that follows. Only rank 0 writes
// events: a run that lost rank 0 is reported by the workbench (its process is gone).
void TrainingRun::emit_rank_lost(const dist::CollectiveError& e) {
  std::string who;
  json ranks = json::array(), hosts = json::array();
  for (const auto& l : e.lost()) {
    who += (who.empty() ? "" : ", ") + l.who();
    ranks.push_back(l.rank);
    hosts.push_back(l.host);
  }
  if (who.empty()) who = "a rank (none looked dead or frozen: a collective timed out)";
  json j = alert_json(alerts::rank_lost(st_.step, who, std::string("the run ends failed: ") + e.what()));
  j["ranks"] = std::move(ranks);
  j["hosts"] = std::move(hosts);
  emit("alert", std::move(j));
}

void TrainingRun::check_disk() {
  struct statvfs sv {};
  if (!rank0_ || ::statvfs(opt_.out_dir.c_str(), &sv) != 0) return;  // unknown: no alert
  if (auto a = alert_ev_.check_disk((double)sv.f_bavail * sv.f_frsize, (double)sv.f_blocks * sv.f_frsize)) emit_alert(*a);
}

// A reading at most every 0.1 s (NVML's utilization is itself an average over 1/6 to 1 s), so
// that millisecond steps do not pay for it each time; the first step always has one.
std::optional<nvml::GpuSample> TrainingRun::read_gpu() {
  if (!nvml_gpu_) return std::nullopt;
  const auto now = clk::now();
  if (last_gpu_read_ && now - *last_gpu_read_ < std::chrono::milliseconds(100)) return std::nullopt;
  last_gpu_read_ = now;
  return nvml_lib_->sample(*nvml_gpu_, false);
}

}  // namespace td::train_detail
