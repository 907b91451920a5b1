// The subcommands of traindeck-engine, one file each (engine/cli/*_cmd.cpp), and main.cpp the
// dispatcher that lists them.
//
// add_<name>_command(app) registers the subcommand and its options on `app` and returns a
// Command whose run() does the work after the command line is parsed; the options' values live
// in state that run() owns. run() returns the exit status (0 done, 1 failed, 130 cancelled by
// a signal, other codes as each command documents) and throws td::Error for bad input, which
// main prints as "error: ..." with status 1. Adding a subcommand is one file and one line in
// main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "engine/config.h"

namespace td::cli {

struct Command {
  CLI::App* app = nullptr;   // the subcommand as registered (true once the command line chose it)
  std::function<int()> run;  // its work; the exit status
};

Command add_prepare_command(CLI::App& app);    // prepare_cmd.cpp: text files -> a dataset directory
Command add_train_command(CLI::App& app);      // train_cmd.cpp: train a model from a config
Command add_launch_command(CLI::App& app);     // train_cmd.cpp: N local ranks of a data-parallel run
Command add_sample_command(CLI::App& app);     // sample_cmd.cpp: generate text from a checkpoint
Command add_plan_command(CLI::App& app);       // plan_cmd.cpp: parameters, FLOPs, memory, cluster plan
Command add_calibrate_command(CLI::App& app);  // plan_cmd.cpp: this CPU's sgemm peak and the engine's share
Command add_profile_command(CLI::App& app);    // plan_cmd.cpp: time each backend op of a few steps
Command add_export_command(CLI::App& app);     // export_cmd.cpp: Hugging Face or safetensors export
Command add_devices_command(CLI::App& app);    // info_cmd.cpp: the devices this engine can train on
Command add_gpus_command(CLI::App& app);       // info_cmd.cpp: NVML's GPUs with one reading each
Command add_config_command(CLI::App& app);     // info_cmd.cpp: the config reference (docs/config.md)
Command add_events_command(CLI::App& app);     // info_cmd.cpp: the step event's fields (docs/events.md)

/// A run config from a --config file: a relative data.path is taken from the config file's
/// folder, each --set "section.field=value" is applied, the result is validated (parse_config)
/// and data.path made absolute. Throws td::ConfigError / td::Error naming the field or file.
RunConfig load_config(const std::string& path, const std::vector<std::string>& sets);

}  // namespace td::cli
