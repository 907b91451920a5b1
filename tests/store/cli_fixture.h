// The `runs` command of traindeck-engine in-process, for store tests that check what it prints.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cli/runs_cmd.h"

namespace td::store::test {

/// Runs `traindeck-engine <args>` through a CLI::App carrying only the runs command; returns
/// what it printed. Throws what CLI11 or the command throws.
inline std::string run_cli(std::vector<std::string> args) {
  CLI::App app("test");
  std::ostringstream out;
  td::cli::add_runs_command(app, out);
  std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
  app.parse(args);
  return out.str();
}

}  // namespace td::store::test
