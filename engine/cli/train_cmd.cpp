// traindeck-engine train (a model from a config; events on stdout and in <out>/events.jsonl)
// and launch (N local ranks of a data-parallel run, docs/distributed.md). engine/cli/command.h.
#include <filesystem>
#include <memory>
#include <optional>

#include "engine/checkpoint/checkpoint.h"
#include "engine/cli/command.h"
#include "engine/cli/db_sink.h"
#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "engine/dist/env.h"
#include "engine/dist/launch.h"
#include "engine/train/trainer.h"
#include "store/ingest.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace td::cli {

RunConfig load_config(const std::string& path, const std::vector<std::string>& sets) {
  json doc = read_json_file(path);
  if (doc.is_object() && doc.contains("data") && doc["data"].is_object() && doc["data"].contains("path") &&
      doc["data"]["path"].is_string()) {
    fs::path p = doc["data"]["path"].get<std::string>();
    if (p.is_relative()) doc["data"]["path"] = (fs::absolute(path).parent_path() / p).lexically_normal().string();
  }
  for (const auto& s : sets) apply_override(doc, s);
  RunConfig cfg = parse_config(doc);
  // A path from --set is taken from the current directory; stored absolute so that the run's
  // config (checkpoints, events, store) means the same from anywhere.
  if (!cfg.data.path.empty()) cfg.data.path = fs::absolute(cfg.data.path).lexically_normal().string();
  return cfg;
}

namespace {

struct TrainState {
  std::string config_path, db_path, experiment = "default";
  std::vector<std::string> sets;
  TrainOptions opt;
  double peak = 0;
  int resume_from = -1;
  CLI::Option* o_resume_from = nullptr;
  std::string metrics_port, metrics_address;  // shorthands for --set train.metrics_port / metrics_address
  bool no_stdout = false;
};

int run_train(TrainState& s) {
  TrainOptions& topt = s.opt;
  if (!s.metrics_port.empty()) s.sets.push_back("train.metrics_port=" + s.metrics_port);
  if (!s.metrics_address.empty()) s.sets.push_back("train.metrics_address=" + s.metrics_address);
  RunConfig cfg = load_config(s.config_path, s.sets);
  if (*s.o_resume_from) {
    topt.resume = true;
    topt.resume_from = s.resume_from;
  }
  if (topt.resume && topt.out_dir.empty()) throw Error("--resume needs --out: the run directory to continue");
  if (!topt.resume && topt.run_id.empty()) topt.run_id = new_run_id();
  if (topt.out_dir.empty()) topt.out_dir = "runs/" + topt.run_id;
  if (s.peak > 0) topt.peak_flops = s.peak;
  topt.events_to_stdout = !s.no_stdout;
  install_stop_handlers();
  std::unique_ptr<DbSink> sink;
  // The store records the run from rank 0's events file; the other ranks write none.
  if (!s.db_path.empty() && dist::read_dist_env().rank == 0) {
    std::string run_id = topt.run_id;
    if (topt.resume) {
      const std::string root = topt.out_dir + "/checkpoints";
      auto latest = topt.resume_from ? std::optional<std::string>(checkpoint_path(root, *topt.resume_from)) : latest_checkpoint(root);
      if (latest && checkpoint_problem(*latest).empty()) run_id = read_trainer_state(*latest).run_id;
    }
    sink = std::make_unique<DbSink>(s.db_path, store::events_path_of(topt.out_dir), s.experiment, run_id, !topt.resume);
    topt.on_event = [&] { sink->poll(); };
  }
  // The store gets the run's end in every exit path: a run that throws (a full disk at a
  // checkpoint) wrote `run_end failed` to its events file first.
  // When that write fails too (the disk is full), the sink records the end directly.
  int rc = 1;
  try {
    rc = run_training(cfg, topt);
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

}  // namespace

Command add_train_command(CLI::App& app) {
  auto s = std::make_shared<TrainState>();
  TrainOptions& topt = s->opt;
  auto* train = app.add_subcommand("train", "Train a model");
  train->add_option("--config", s->config_path, "Run config (JSON)")->required()->check(CLI::ExistingFile);
  train->add_option("--set", s->sets, "Override a field: section.field=value (repeatable)");
  train->add_option("--out", topt.out_dir, "Run directory (default: runs/<run-id>)");
  train->add_option("--run-id", topt.run_id, "Run id (default: generated): letters, digits, '.', '_', '-'")
      ->check(CLI::Validator([](std::string& id) -> std::string { return valid_run_id(id) ? "" : kRunIdRule; }, "RUN_ID"));
  train->add_option("--run-name", topt.run_name,
                    "A name for people (\"lr=1e-3, 6 layers\"), shown instead of the id in the workbench and runs list")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            std::string problem;
            name = normalise_run_name(name, &problem);
            return problem;
          },
          "NAME"));
  train->add_flag("--resume", topt.resume, "Continue from the newest checkpoint in --out that verifies (checksums, finite weights)");
  s->o_resume_from = train->add_option("--resume-from", s->resume_from,
                                       "Continue from the checkpoint of this step in --out (implies --resume; it must verify); "
                                       "newer checkpoints are renamed step_NNNNNNNN.set-aside-ATTEMPT")
                         ->check(CLI::NonNegativeNumber);
  train->add_option("--init-from", topt.init_from,
                    "Start a new run (step 0, fresh optimizer) from these weights: an export (hf or safetensors), "
                    "a checkpoint or a run directory; the model shape must match");
  train->add_option("--metrics-port", s->metrics_port,
                    "Serve the run's current figures to Prometheus on this port (text format at /metrics; 0: a free port, "
                    "named in run_start's metrics_url); as --set train.metrics_port=PORT");
  train->add_option("--metrics-address", s->metrics_address,
                    "Address --metrics-port listens on (default 127.0.0.1: this machine only; 0.0.0.0: every interface); "
                    "as --set train.metrics_address=ADDR");
  train->add_option("--db", s->db_path, "Also record the run in this SQLite store");
  train->add_option("--experiment", s->experiment, "Experiment name in the store");
  train->add_option("--peak-flops", s->peak, "Peak FLOP/s for MFU (default: calibrated sgemm peak)");
  train->add_flag("--quiet", topt.quiet, "No progress lines on stderr");
  train->add_flag("--no-events-stdout", s->no_stdout, "Write events only to <out>/events.jsonl, not to stdout");
  train->add_option("--debug-stop-after", topt.stop_after_step, "Testing: stop (as on SIGINT) after this step")->group("");
  train->add_option("--debug-nonfinite-at", topt.inject_nonfinite_steps, "Testing: force a non-finite loss at these steps")->group("");
  train->add_option("--debug-loss-spike-at", topt.inject_loss_spike_steps, "Testing: report ten times the loss at these steps")->group("");
  train->add_option("--debug-nonfinite-weights-at", topt.inject_nonfinite_weights_step,
                    "Testing: make the first weight NaN after this step's update")->group("");
  train->add_option("--debug-window-log", topt.window_log, "Testing: each rank appends its window ids per micro batch to PATH.<rank>")
      ->group("");
  return {train, [s] { return run_train(*s); }};
}

Command add_launch_command(CLI::App& app) {
  auto opt = std::make_shared<dist::LaunchOptions>();
  auto* launch = app.add_subcommand("launch", "Start N local ranks of a data-parallel run: launch --nproc N -- train --config run.json ...");
  launch->add_option("--nproc", opt->nproc, "Ranks to start on this machine")->required()->check(CLI::Range(1, 4096));
  launch->add_option("--master-addr", opt->master_addr, "Address of rank 0's rendezvous store (default 127.0.0.1)");
  launch->add_option("--master-port", opt->master_port, "Its TCP port (default: a free one)")->check(CLI::Range(0, 65535));
  launch->add_option("--grace", opt->grace_s, "Seconds the other ranks get to stop after one fails, before SIGKILL")->check(CLI::Range(0.0, 1e6));
  launch->add_flag("--quiet", opt->quiet, "No launch: lines on stderr");
  launch->add_option("command", opt->command, "The command of each rank, after --: train --config run.json ...")->required();
  return {launch, [opt] { return dist::run_launch(*opt); }};
}

}  // namespace td::cli
