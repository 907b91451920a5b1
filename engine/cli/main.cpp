// traindeck-engine: the command-line front of the engine. One file per subcommand
// (engine/cli/command.h); this file lists them and dispatches.
//   prepare   text files -> dataset directory (token shards, tokenizer, manifest)
//   train     train a model from a config; events on stdout and in <out>/events.jsonl
//   launch    start N local ranks of a data-parallel run (docs/distributed.md)
//   sample    generate text from a checkpoint
//   plan      parameters, FLOPs and memory of a config
//   calibrate measure this CPU's sgemm peak (the MFU denominator) and the engine's share of it
//   profile   time each backend op of a few training steps of a config
//   export    a checkpoint as a Hugging Face directory, or raw safetensors (docs/export.md)
//   devices   the devices this engine can train on (cpu, cuda:N), as JSON
//   gpus      this machine's NVIDIA GPUs with one telemetry reading each, as JSON
//   config    print the config reference (docs/config.md)
//   events    print the step event's fields (docs/events.md)
//   runs      list, show, export and ingest runs in the store (engine/cli/runs_cmd.h)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/runs_cmd.h"
#include "engine/common/error.h"
#include "engine/ops/blas_kernel.h"

int main(int argc, char** argv) {
  td::ensure_blas_kernel(argv);  // may re-execute this program once with a faster GEMM kernel
  CLI::App app{"traindeck-engine " TD_VERSION ": train GPT-style language models (TrainDeck's engine)"};
  app.set_version_flag("--version", std::string("traindeck-engine ") + TD_VERSION);
  app.require_subcommand(1);
  using namespace td::cli;
  const std::vector<Command> commands = {
      add_prepare_command(app), add_train_command(app),   add_launch_command(app),  add_sample_command(app),
      add_plan_command(app),    add_calibrate_command(app), add_profile_command(app), add_devices_command(app),
      add_gpus_command(app),    add_config_command(app),  add_events_command(app),  add_export_command(app),
  };
  add_runs_command(app);  // its subcommands do their work in CLI11 callbacks, i.e. inside parse()
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    for (const Command& c : commands)
      if (*c.app) return c.run();
  } catch (const td::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
