#include "engine/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/common/run_id.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

json TrainerState::to_json() const {
  return {{"format", "traindeck-trainer-state"}, {"version", 1}, {"step", step},
          {"tokens_seen", tokens_seen}, {"adam_t", adam_t}, {"run_id", run_id},
          {"attempt", attempt}, {"sample_rng", sample_rng}, {"loader", loader.to_json()},
          {"config", config}};
}

TrainerState TrainerState::from_json(const json& j) {
  TrainerState s;
  s.step = j.at("step").get<int>();
  s.tokens_seen = j.at("tokens_seen").get<uint64_t>();
  s.adam_t = j.at("adam_t").get<int>();
  s.run_id = j.at("run_id").get<std::string>();
  s.attempt = j.at("attempt").get<int>();
  s.sample_rng = j.at("sample_rng").get<uint64_t>();
  s.loader = LoaderState::from_json(j.at("loader"));
  s.config = j.at("config");
  return s;
}

namespace {

std::string step_dir_name(int step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08d", step);
  return buf;
}

// Step number of a complete checkpoint directory name, or -1.
int parse_step_dir(const std::string& name) {
  if (name.size() != 13 || name.rfind("step_", 0) != 0) return -1;
  for (size_t i = 5; i < name.size(); i++)
    if (name[i] < '0' || name[i] > '9') return -1;
  return std::stoi(name.substr(5));
}

void write_text_synced(const std::string& path, const std::string& text) {
  File f(path, File::kWriteNew);
  f.write_all(text.data(), text.size());
  f.sync();
}

std::vector<float> download_all(Backend& be, const float* p, size_t n) {
  std::vector<float> host(n);
  be.download(host.data(), p, n * sizeof(float));
  return host;
}

}  // namespace

// Writes the checkpoint files into tmp, fsyncs them, renames tmp to final_dir.
static CheckpointInfo write_checkpoint_dir(const std::string& root, const std::string& tmp, const std::string& final_dir,
                                           GPT& model, AdamW* opt, const TrainerState& state) {
  Backend& be = model.backend();
  CheckpointInfo info;
  {
    auto params = download_all(be, model.params(), model.num_params());
    std::vector<SafeTensor> ts;
    for (const auto& t : model.tensors()) ts.push_back({t.name, t.shape, params.data() + t.offset});
    info.bytes += write_safetensors(tmp + "/model.safetensors", ts, {{"format", "traindeck-gpt2"}, {"step", std::to_string(state.step)}});
  }
  if (opt) {
    auto m = download_all(be, opt->m(), opt->size());
    auto v = download_all(be, opt->v(), opt->size());
    std::vector<SafeTensor> ts;
    for (const auto& t : model.tensors()) {
      ts.push_back({t.name + ".exp_avg", t.shape, m.data() + t.offset});
      ts.push_back({t.name + ".exp_avg_sq", t.shape, v.data() + t.offset});
    }
    info.bytes += write_safetensors(tmp + "/optimizer.safetensors", ts, {{"format", "traindeck-adamw"}});
  }
  std::string tj = state.to_json().dump(2) + "\n";
  write_text_synced(tmp + "/trainer.json", tj);
  info.bytes += tj.size();
  sync_dir(tmp);
  fs::remove_all(final_dir);  // a checkpoint of the same step from an earlier attempt
  fs::rename(tmp, final_dir);
  sync_dir(root);
  info.path = final_dir;
  return info;
}

CheckpointInfo save_checkpoint(const std::string& root, GPT& model, AdamW* opt, const TrainerState& state) {
  if (std::error_code ec = create_private_dirs(root))
    fail("cannot create the checkpoint folder '" + root + "': " + ec.message() + "; check that the run directory is writable");
  const std::string final_dir = root + "/" + step_dir_name(state.step);
  const std::string tmp = final_dir + ".tmp";
  fs::remove_all(tmp);  // a link planted there is removed, never followed
  // A fresh owner-only folder (exclusive: nothing planted between the remove and here); its
  // files are created O_EXCL | O_NOFOLLOW, mode 0600 (File::kWriteNew).
  if (::mkdir(tmp.c_str(), 0700) != 0) fail_errno("cannot create the checkpoint folder", tmp);
  try {
    return write_checkpoint_dir(root, tmp, final_dir, model, opt, state);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);  // e.g. a full disk: leave no half-written checkpoint behind
    throw;
  }
}

std::string checkpoint_problem(const std::string& dir) {
  try {
    read_trainer_state(dir);
    SafetensorsFile weights(dir + "/model.safetensors");
    if (fs::exists(dir + "/optimizer.safetensors")) SafetensorsFile opt(dir + "/optimizer.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

namespace {

// Complete (renamed) checkpoint directories under root, by step.
std::vector<std::pair<int, fs::path>> checkpoint_dirs(const std::string& root) {
  std::vector<std::pair<int, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    int s = parse_step_dir(e.path().filename().string());
    if (s >= 0 && e.is_directory(ec)) out.push_back({s, e.path()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::optional<std::string> latest_checkpoint(const std::string& root, std::vector<std::string>* damaged) {
  auto dirs = checkpoint_dirs(root);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    std::string problem = checkpoint_problem(it->second.string());
    if (problem.empty()) return it->second.string();
    if (damaged) damaged->push_back(it->second.string() + ": " + problem);
  }
  return std::nullopt;
}

TrainerState read_trainer_state(const std::string& dir) {
  std::ifstream in(dir + "/trainer.json");
  if (!in) fail("checkpoint '" + dir + "' has no trainer.json: it is incomplete; use an older checkpoint");
  TrainerState st;
  try {
    st = TrainerState::from_json(json::parse(in));
  } catch (const json::exception& e) {
    throw Error("checkpoint '" + dir + "/trainer.json' is malformed (" + e.what() + ")");
  }
  // The id names the run's rows in the store and its folders: checked as --run-id is.
  if (!valid_run_id(st.run_id))
    fail("checkpoint '" + dir + "/trainer.json' names the run " + json(st.run_id).dump() + ", which is not a valid run id (" + kRunIdRule +
         "): the file was not written by TrainDeck; use another checkpoint");
  return st;
}

void load_checkpoint(const std::string& dir, GPT& model, AdamW* opt) {
  Backend& be = model.backend();
  SafetensorsFile weights(dir + "/model.safetensors");
  std::vector<float> host(model.num_params());
  for (const auto& t : model.tensors()) weights.read_f32(t.name, host.data() + t.offset, t.numel);
  be.upload(model.params(), host.data(), host.size() * sizeof(float));
  if (opt) {
    SafetensorsFile o(dir + "/optimizer.safetensors");
    std::vector<float> v(model.num_params());
    for (const auto& t : model.tensors()) {
      o.read_f32(t.name + ".exp_avg", host.data() + t.offset, t.numel);
      o.read_f32(t.name + ".exp_avg_sq", v.data() + t.offset, t.numel);
    }
    be.upload(opt->m(), host.data(), host.size() * sizeof(float));
    be.upload(opt->v(), v.data(), v.size() * sizeof(float));
  }
}

void prune_checkpoints(const std::string& root, int keep) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) fs::remove_all(e.path(), ec);
  }
  auto dirs = checkpoint_dirs(root);
  int kept = 0;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (kept < keep && checkpoint_problem(it->second.string()).empty()) {
      kept++;
      continue;
    }
    fs::remove_all(it->second, ec);
  }
}

}  // namespace td
