// The run_start event's schema: ONE table of its fields, which everything else reads:
//  * the trainer writes each field under run_start_key("key") (engine/train/training_run.cpp),
//    consteval: a key the table does not have is a compile error;
//  * the store's ingest (store/ingest.cpp) knows a run_start field by this table, and reports
//    a field it does not have;
//  * `traindeck-engine events --markdown` prints it in docs/events.md ("run_start fields");
//  * run_start_problems() checks an event against it (tests/engine/test_step_fields.cpp).
// Before the table, the three kept their own lists and drifted: the ingest did not know
// gelu_fusion (four tests failed in CI once) nor metrics_url.
//
// Adding a field: a row here (key, type, whether it may be null, when it is present, meaning),
// its value in the trainer, then tools/update-events-doc. No Qt, no I/O: header-only (the
// ingest and the fuzzers use it); the Markdown writer is in step_fields.cpp (td_engine).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {

/// The JSON type of a run_start field.
enum class RunStartType : unsigned char { Int, Number, String, Object, Array };

struct RunStartField {
  const char* key;
  RunStartType type;
  bool nullable;        // null is a value ("unknown", "fresh start")
  const char* when;     // "" when every run_start has it; else when it is present
  const char* meaning;  // English, for docs/events.md
};

inline constexpr std::array kRunStartFields = {
    RunStartField{"config", RunStartType::Object, false, "", "the full validated run config (docs/config.md), every field with its value"},
    RunStartField{"n_params", RunStartType::Int, false, "", "parameters of the whole model (under tensor parallelism too)"},
    RunStartField{"flops_per_token", RunStartType::Number, false, "", "training FLOPs per token (docs in engine/plan/plan.h)"},
    RunStartField{"host", RunStartType::String, false, "", "host name of rank 0"},
    RunStartField{"device", RunStartType::String, false, "", "`train.device` as the rank runs it: `cpu`, `cuda`, `cuda:N`"},
    RunStartField{"device_name", RunStartType::String, false, "", "the GPU's name from the CUDA runtime, or the CPU model"},
    RunStartField{"precision", RunStartType::String, false, "", "`fp32` or `bf16`: `train.precision` resolved"},
    RunStartField{"attention", RunStartType::String, false, "", "`simple` or `fused` (`train.attention`)"},
    RunStartField{"gelu_fusion", RunStartType::String, false, "",
                  "`none` or `epilogue`: `train.gelu_fusion` as the model runs it (`none` for the Llama block's families, whose "
                  "SwiGLU has no GELU)"},
    RunStartField{"cpu", RunStartType::String, false, "", "the CPU model"},
    RunStartField{"blas_kernel", RunStartType::String, false, "", "OpenBLAS's GEMM kernel"},
    RunStartField{"threads", RunStartType::Int, false, "", "CPU threads of each rank"},
    RunStartField{"world_size", RunStartType::Int, false, "", "ranks of the run"},
    RunStartField{"engine_version", RunStartType::String, false, "", "the engine's version"},
    RunStartField{"engine_build", RunStartType::String, false, "",
                  "how the engine was built: \"<compiler> <version>, <CMake build type>, <architecture>\", e.g. `gcc 12.2.0, Release, x86_64`"},
    RunStartField{"dataset", RunStartType::Object, false, "",
                  "the data the run reads: `path` (absolute, on the machine that trains), `manifest_sha256` (SHA-256 of its "
                  "`manifest.json`, 64 lowercase hex digits, what `sha256sum manifest.json` prints), `train_tokens` and "
                  "`val_tokens` (the manifest's `splits.train.tokens` / `splits.val.tokens`)"},
    RunStartField{"peak_flops", RunStartType::Number, true, "",
                  "FLOP/s, null when unknown: a CPU's measured sgemm peak, a GPU's dense peak at the precision trained from the "
                  "device catalogue `resources/devices.json`"},
    RunStartField{"resumed_from_step", RunStartType::Int, true, "", "the checkpoint's step the attempt resumed from; null on a fresh start"},
    RunStartField{"out_dir", RunStartType::String, false, "", "the absolute run directory"},
    RunStartField{"pid", RunStartType::Int, false, "", "rank 0's process id"},
    RunStartField{"name", RunStartType::String, false, "the run was given one",
                  "`--run-name`: free text for people, at most 120 bytes, no control characters"},
    RunStartField{"metrics_url", RunStartType::String, false, "rank 0 serves Prometheus",
                  "`--metrics-port`: `http://127.0.0.1:PORT/metrics` (see \"Prometheus\")"},
    RunStartField{"hosts", RunStartType::Array, false, "data parallel", "the host name of each rank, by rank"},
    RunStartField{"compute_capability", RunStartType::String, false, "on a GPU", "the GPU's compute capability, \"9.0\""},
    RunStartField{"gpu_memory_total", RunStartType::Int, false, "on a GPU", "bytes: the CUDA runtime's `cudaMemGetInfo` total"},
    RunStartField{"gpu_memory_free", RunStartType::Int, false, "on a GPU, when readable",
                  "bytes free on the device when the run started, before the model's buffers (`cudaMemGetInfo`: other "
                  "processes, this process's CUDA context and its library handles are already taken off)"},
};

/// The table's row of `key`, or null.
constexpr const RunStartField* find_run_start_field(std::string_view key) {
  for (const RunStartField& f : kRunStartFields)
    if (key == f.key) return &f;
  return nullptr;
}

/// `key`, checked at compile time against the table: the trainer writes run_start's fields
/// through this, so a field the table (and with it the store and the docs) does not know does not
/// compile.
consteval const char* run_start_key(std::string_view key) {
  const RunStartField* f = find_run_start_field(key);
  if (!f) throw "run_start_key: not a field of kRunStartFields (engine/metrics/run_start_fields.h)";
  return f->key;
}

/// What is wrong with the members of a run_start event `fields` (without the common members
/// type, v, t, run_id, attempt, rank), against the table: a member it does not have, a field
/// every run_start has that is missing, a value of the wrong type. Empty when it conforms.
inline std::vector<std::string> run_start_problems(const nlohmann::json& fields) {
  std::vector<std::string> out;
  if (!fields.is_object()) return {"run_start is not a JSON object"};
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    const std::string& k = it.key();
    if (k == "type" || k == "v" || k == "t" || k == "run_id" || k == "attempt" || k == "rank") continue;
    const RunStartField* f = find_run_start_field(k);
    if (!f) {
      out.push_back("unknown field \"" + k + "\"");
      continue;
    }
    const nlohmann::json& v = it.value();
    bool ok = v.is_null() && f->nullable;
    switch (f->type) {
      case RunStartType::Int: ok = ok || v.is_number_integer() || v.is_number_unsigned(); break;
      case RunStartType::Number: ok = ok || v.is_number(); break;
      case RunStartType::String: ok = ok || v.is_string(); break;
      case RunStartType::Object: ok = ok || v.is_object(); break;
      case RunStartType::Array: ok = ok || v.is_array(); break;
    }
    if (!ok) out.push_back("field \"" + k + "\" has the wrong type: " + v.dump().substr(0, 80));
  }
  for (const RunStartField& f : kRunStartFields)
    if (!*f.when && !fields.contains(f.key)) out.push_back("field \"" + std::string(f.key) + "\" is missing");
  return out;
}

}  // namespace td
