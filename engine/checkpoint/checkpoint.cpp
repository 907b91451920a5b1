#include "engine/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/checkpoint/checksums.h"
#include "engine/checkpoint/keep.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/common/run_id.h"
#include "engine/model/shape.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

json TrainerState::to_json() const {
  return {{"format", "traindeck-trainer-state"}, {"version", 1}, {"step", step},
          {"tokens_seen", tokens_seen}, {"adam_t", adam_t}, {"run_id", run_id},
          {"attempt", attempt}, {"sample_rng", sample_rng}, {"loader", loader.to_json()},
          {"config", config}, {"checksums", kChecksumsFile}};
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
  const auto c = j.find("checksums");
  s.checksums = c != j.end() && c->is_string() && c->get<std::string>() == kChecksumsFile;
  return s;
}

namespace {

// Step number of a complete checkpoint directory name, or -1 (keep.h).
int parse_step_dir(const std::string& name) { return checkpoint_step_of_name(name); }

void write_text_synced(const std::string& path, const std::string& text) {
  File f(path, File::kWriteNew);
  f.write_all(text.data(), text.size());
  f.sync();
}

// One read of a checkpoint file: its SHA-256 and, for a safetensors file, the non-finite floats
// of its data section (the float32 values after the 8 + N header bytes).
struct FileScan {
  std::string sha256;          // lowercase hex
  uint64_t nonfinite = 0;      // NaN or +-Inf values (safetensors only)
  uint64_t first_nonfinite = 0;  // byte offset of the first in the data section
};

// Reads path once (O_NOFOLLOW: a symlink in a checkpoint is refused, not followed). Throws
// td::Error naming the file when it cannot be opened or read.
FileScan scan_file(const std::string& path, bool safetensors) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) fail("'" + path + "' is a symbolic link: a checkpoint's files must be regular files (copy the file there)");
  if (fd < 0) fail_errno("cannot open", path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) fail_errno("cannot stat", path);
  if (!S_ISREG(st.st_mode)) fail("'" + path + "' is not a regular file");
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) fail("cannot start a SHA-256 (OpenSSL) for '" + path + "'");
  FileScan out;
  uint64_t data_start = UINT64_MAX;  // unknown until the header length is read
  uint64_t pos = 0;
  std::vector<char> buf(4u << 20);
  size_t carry = 0;  // bytes of a float cut by the end of the previous read, at the front of buf
  for (;;) {
    ssize_t n = ::read(fd, buf.data() + carry, buf.size() - carry);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("cannot read", path);
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data() + carry, (size_t)n);
    const uint64_t begin = pos - carry;  // file offset of buf[0]
    pos += (uint64_t)n;
    size_t have = carry + (size_t)n;
    carry = 0;
    if (!safetensors) continue;
    if (data_start == UINT64_MAX) {
      if (pos < 8) {  // the 8-byte header length is not in yet
        carry = have;
        continue;
      }
      uint64_t hn;
      std::memcpy(&hn, buf.data(), 8);  // begin == 0 here
      data_start = hn > (uint64_t)st.st_size ? (uint64_t)st.st_size : 8 + hn;
    }
    // The floats of the data section within buf: from max(begin, data_start), whole ones only.
    uint64_t off = std::max(begin, data_start);
    const uint64_t end = begin + have;
    for (; off + 4 <= end; off += 4) {
      float v;
      std::memcpy(&v, buf.data() + (off - begin), 4);
      if (!std::isfinite(v)) {
        if (out.nonfinite++ == 0) out.first_nonfinite = off - data_start;
      }
    }
    if (off < end && off >= data_start) {  // a float cut by this read: keep its bytes
      carry = (size_t)(end - off);
      std::memmove(buf.data(), buf.data() + (off - begin), carry);
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* kHex = "0123456789abcdef";
  for (unsigned i = 0; i < len; i++) {
    out.sha256 += kHex[md[i] >> 4];
    out.sha256 += kHex[md[i] & 15];
  }
  return out;
}

bool is_safetensors(const std::string& name) {
  return name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
}

// "<file>: N non-finite values ..., the first in tensor '<name>'" for a scan that found some.
std::string nonfinite_problem(const std::string& path, const std::string& file, const FileScan& scan) {
  std::string tensor;
  try {
    SafetensorsFile f(path);
    for (const auto& [name, e] : f.entries())
      if (scan.first_nonfinite >= e.begin && scan.first_nonfinite < e.end) tensor = name;
  } catch (const Error&) {
  }
  return file + " holds " + std::to_string(scan.nonfinite) + " non-finite value" + (scan.nonfinite == 1 ? "" : "s") +
         " (NaN or Inf)" + (tensor.empty() ? std::string() : ", the first in tensor '" + tensor + "'") +
         ": training diverged before this checkpoint was written; use an older one (train --resume-from STEP)";
}

// Checkpoints that verified in this process, with the identity of their files then (inode,
// size, modification time): checking one again reads nothing unless a file changed. A
// checkpoint this process wrote is entered when written.
std::mutex g_verified_mu;
std::map<std::string, std::string> g_verified;

std::string files_identity(const std::string& dir) {
  std::string id;
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "trainer.json", kChecksumsFile}) {
    struct stat st;
    id += name;
    if (::lstat((dir + "/" + name).c_str(), &st) != 0) {
      id += ":-;";
      continue;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, ":%llu:%lld:%lld.%09ld;", (unsigned long long)st.st_ino, (long long)st.st_size,
                  (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    id += buf;
  }
  return id;
}

void remember_verified(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_verified_mu);
  g_verified[dir] = files_identity(dir);
}

bool known_verified(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_verified_mu);
  auto it = g_verified.find(dir);
  return it != g_verified.end() && it->second == files_identity(dir);
}

// A checkpoint's SHA256SUMS read with O_NOFOLLOW (at most 64 KiB), parsed.
std::vector<std::pair<std::string, std::string>> read_sums(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open", path);
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail_errno("cannot read", path);
    }
    if (n == 0 || text.size() > (64u << 10)) break;
    text.append(buf, (size_t)n);
  }
  ::close(fd);
  if (text.size() > (64u << 10)) fail("'" + path + "' is larger than 64 KiB: it is not a checkpoint's checksum file");
  return parse_sha256sums(text, "'" + path + "'");
}

// Why the files of dir do not verify ("" when they do): against SHA256SUMS when it is there,
// and finite floats in every safetensors file either way.
std::string files_problem(const std::string& dir) {
  const std::string sums_path = dir + "/" + kChecksumsFile;
  struct stat st;
  if (::lstat(sums_path.c_str(), &st) != 0) {
    // A checkpoint written with checksums says so in trainer.json: its list missing is damage
    // (deleted, or a copy that left it out), never a reason to check less.
    if (read_trainer_state(dir).checksums)
      return std::string(kChecksumsFile) + " is missing, but trainer.json says the checkpoint was written with it: the list was "
             "deleted or the checkpoint was copied without it, so its files cannot be verified; restore " + kChecksumsFile +
             " from where the checkpoint came from, or use an older checkpoint";
    // Written before checksums: finite values only.
    for (const char* name : {"model.safetensors", "optimizer.safetensors"}) {
      const std::string p = dir + "/" + name;
      if (::lstat(p.c_str(), &st) != 0) continue;  // the structural check said which are required
      FileScan scan = scan_file(p, true);
      if (scan.nonfinite) return nonfinite_problem(p, name, scan);
    }
    return "";
  }
  const auto sums = read_sums(sums_path);
  for (const char* required : {"model.safetensors", "trainer.json", "optimizer.safetensors"}) {
    const bool listed = std::any_of(sums.begin(), sums.end(), [&](const auto& e) { return e.first == required; });
    const bool there = ::lstat((dir + "/" + required).c_str(), &st) == 0;
    if (!listed && (there || std::string(required) != "optimizer.safetensors"))
      return std::string(kChecksumsFile) + " does not list " + required + ": the checksum file is damaged";
  }
  for (const auto& [name, hex] : sums) {
    const std::string p = dir + "/" + name;
    if (::lstat(p.c_str(), &st) != 0) return name + " is listed in " + kChecksumsFile + " but missing: the checkpoint is incomplete";
    FileScan scan = scan_file(p, is_safetensors(name));
    if (scan.sha256 != hex)
      return name + " does not match its SHA-256 in " + kChecksumsFile + " (" + scan.sha256.substr(0, 12) + "..., listed " +
             hex.substr(0, 12) + "...): the file was damaged or changed after the checkpoint was written; use an older checkpoint";
    if (scan.nonfinite) return nonfinite_problem(p, name, scan);
  }
  return "";
}

}  // namespace

// Writes the checkpoint files into tmp, fsyncs them, renames tmp to final_dir. The state comes
// tensor by tensor from `read` in the layout of `tensors` (m and v when has_opt).
static CheckpointInfo write_checkpoint_dir(const std::string& root, const std::string& tmp, const std::string& final_dir,
                                           const std::string& family, const std::vector<ParamTensor>& tensors,
                                           const StateReader& read, bool has_opt, const TrainerState& state) {
  CheckpointInfo info;
  {
    std::vector<SafeTensor> ts;
    for (const auto& t : tensors) ts.push_back({t.name, t.shape, nullptr});
    // "traindeck-gpt2" or "traindeck-llama": the family whose tensor names the file holds.
    info.bytes += write_safetensors_from(tmp + "/model.safetensors", ts, [&](size_t i) { return read(i, 0); },
                                         {{"format", "traindeck-" + family}, {"step", std::to_string(state.step)}});
  }
  if (has_opt) {
    std::vector<SafeTensor> ts;
    for (const auto& t : tensors) {
      ts.push_back({t.name + ".exp_avg", t.shape, nullptr});
      ts.push_back({t.name + ".exp_avg_sq", t.shape, nullptr});
    }
    // Entry i is tensor i / 2's m (even i) or v (odd i): for_each_state_read's order.
    info.bytes += write_safetensors_from(tmp + "/optimizer.safetensors", ts, [&](size_t i) { return read(i / 2, 1 + (int)(i % 2)); },
                                         {{"format", "traindeck-adamw"}});
  }
  std::string tj = state.to_json().dump(2) + "\n";
  write_text_synced(tmp + "/trainer.json", tj);
  info.bytes += tj.size();
  // SHA256SUMS of the files as written (read back once: the page cache holds them), and the
  // values checked for NaN/Inf in the same pass.
  std::vector<std::pair<std::string, std::string>> sums;
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "trainer.json"}) {
    if (!has_opt && std::string(name) == "optimizer.safetensors") continue;
    FileScan scan = scan_file(tmp + "/" + name, is_safetensors(name));
    if (scan.nonfinite && info.problem.empty()) info.problem = nonfinite_problem(tmp + "/" + name, name, scan);
    sums.emplace_back(name, scan.sha256);
  }
  const std::string sums_text = format_sha256sums(sums);
  write_text_synced(tmp + "/" + kChecksumsFile, sums_text);
  info.bytes += sums_text.size();
  sync_dir(tmp);
  fs::remove_all(final_dir);  // a checkpoint of the same step from an earlier attempt
  fs::rename(tmp, final_dir);
  sync_dir(root);
  info.path = final_dir;
  if (info.problem.empty()) remember_verified(final_dir);
  return info;
}

namespace {

template <class Write>
CheckpointInfo save_checkpoint_with(const std::string& root, const TrainerState& state, Write&& write) {
  refuse_linked_checkpoint_root(root);
  if (std::error_code ec = create_private_dirs(root))
    fail("cannot create the checkpoint folder '" + root + "': " + ec.message() + "; check that the run directory is writable");
  const std::string final_dir = checkpoint_dir_of(root, state.step);
  const std::string tmp = final_dir + ".tmp";
  fs::remove_all(tmp);  // a link planted there is removed, never followed
  // A fresh owner-only folder (exclusive: nothing planted between the remove and here); its
  // files are created O_EXCL | O_NOFOLLOW, mode 0600 (File::kWriteNew).
  if (::mkdir(tmp.c_str(), 0700) != 0) fail_errno("cannot create the checkpoint folder", tmp);
  try {
    return write(tmp, final_dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);  // e.g. a full disk: leave no half-written checkpoint behind
    throw;
  }
}

}  // namespace

void for_each_state_read(size_t n_tensors, bool moments, const std::function<void(size_t, int)>& fn) {
  for (size_t i = 0; i < n_tensors; i++) fn(i, 0);
  if (moments)
    for (size_t i = 0; i < n_tensors; i++) {
      fn(i, 1);
      fn(i, 2);
    }
}

CheckpointInfo save_checkpoint(const std::string& root, const ModelConfig& model, const StateReader& read, bool moments,
                               const TrainerState& state) {
  const std::vector<ParamTensor> tensors = model_param_tensors(model);
  return save_checkpoint_with(root, state, [&](const std::string& tmp, const std::string& final_dir) {
    return write_checkpoint_dir(root, tmp, final_dir, model.family, tensors, read, moments, state);
  });
}

CheckpointInfo save_checkpoint(const std::string& root, GPT& model, AdamW* opt, const TrainerState& state) {
  Backend& be = model.backend();
  const std::vector<ParamTensor>& tensors = model.tensors();
  TD_ASSERT(opt == nullptr || opt->size() == model.num_params());
  // The CPU backend's memory is host memory: written in place. Elsewhere each tensor is
  // downloaded into one buffer of the largest tensor's size (4 x 38.6 M floats = 154 MB for
  // GPT-2 124M's wte) instead of a host copy of the whole state (12 bytes a parameter).
  const bool in_place = be.name() == "cpu";
  size_t largest = 0;
  for (const auto& t : tensors) largest = std::max(largest, t.numel);
  std::vector<float> buf(in_place ? 0 : largest);
  const StateReader read = [&](size_t i, int which) -> const float* {
    const ParamTensor& t = tensors[i];
    const float* src = (which == 0 ? model.params() : which == 1 ? opt->m() : opt->v()) + t.offset;
    if (in_place) return src;
    be.download(buf.data(), src, t.numel * sizeof(float));
    return buf.data();
  };
  return save_checkpoint_with(root, state, [&](const std::string& tmp, const std::string& final_dir) {
    return write_checkpoint_dir(root, tmp, final_dir, model.config().family, tensors, read, opt != nullptr, state);
  });
}

CheckpointInfo save_checkpoint(const std::string& root, const HostCheckpoint& c, const TrainerState& state) {
  const std::vector<ParamTensor> tensors = model_param_tensors(c.model);
  TD_ASSERT(c.params.size() == model_num_params(c.model) && (c.m.empty() || (c.m.size() == c.params.size() && c.v.size() == c.params.size())));
  const StateReader read = [&](size_t i, int which) { return (which == 0 ? c.params : which == 1 ? c.m : c.v).data() + tensors[i].offset; };
  return save_checkpoint_with(root, state, [&](const std::string& tmp, const std::string& final_dir) {
    return write_checkpoint_dir(root, tmp, final_dir, c.model.family, tensors, read, !c.m.empty(), state);
  });
}

std::string checkpoint_problem(const std::string& dir) {
  if (known_verified(dir)) return "";
  try {
    read_trainer_state(dir);
    SafetensorsFile weights(dir + "/model.safetensors");
    if (fs::exists(dir + "/optimizer.safetensors")) SafetensorsFile opt(dir + "/optimizer.safetensors");
    if (std::string problem = files_problem(dir); !problem.empty()) return problem;
  } catch (const Error& e) {
    return e.what();
  }
  remember_verified(dir);
  return "";
}

std::string file_sha256(const std::string& path) { return scan_file(path, false).sha256; }

std::string checkpoint_note(const std::string& dir) {
  struct stat st;
  if (::lstat((dir + "/" + kChecksumsFile).c_str(), &st) == 0) return "";
  try {
    if (read_trainer_state(dir).checksums) return "";  // checkpoint_problem refuses it instead
  } catch (const Error&) {
  }
  return "checkpoint '" + dir + "' has no " + kChecksumsFile +
         " (it was written before TrainDeck recorded checksums): only its structure and finite weights were checked";
}

std::string checkpoint_path(const std::string& root, int step) { return checkpoint_dir_of(root, step); }

void refuse_linked_checkpoint_root(const std::string& root) {
  std::error_code ec;
  if (fs::symlink_status(root, ec).type() == fs::file_type::symlink)
    fail("the checkpoint folder '" + root + "' is a symbolic link: TrainDeck never writes or reads a run's checkpoints through a "
         "link (it would change or load whatever the link points to); replace the link with a real folder (move the "
         "checkpoints into it) and run again");
}

namespace {

// Complete (renamed) checkpoint directories under root, by step.
std::vector<std::pair<int, fs::path>> checkpoint_dirs(const std::string& root) {
  std::vector<std::pair<int, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    // A step folder that is a link is not one of the run's checkpoints: never followed.
    int s = parse_step_dir(e.path().filename().string());
    if (s >= 0 && e.symlink_status(ec).type() == fs::file_type::directory) out.push_back({s, e.path()});
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

std::vector<CheckpointStatus> checkpoint_statuses(const std::string& root, bool verify) {
  std::vector<CheckpointStatus> out;
  for (const auto& [step, path] : checkpoint_dirs(root))
    out.push_back({step, path.string(), verify ? checkpoint_problem(path.string()) : std::string()});
  return out;
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

CheckpointTensorReader::CheckpointTensorReader(const std::string& dir, const ModelConfig& model, bool optimizer)
    : tensors_(model_param_tensors(model)), weights_(dir + "/model.safetensors") {
  if (optimizer) moments_.emplace(dir + "/optimizer.safetensors");
  for (const auto& t : tensors_) {
    weights_.check_f32(t.name, t.numel);
    if (moments_) {
      moments_->check_f32(t.name + ".exp_avg", t.numel);
      moments_->check_f32(t.name + ".exp_avg_sq", t.numel);
    }
  }
}

void CheckpointTensorReader::read(size_t i, int which, float* out) const {
  const ParamTensor& t = tensors_[i];
  TD_ASSERT(which == 0 || moments_);
  if (which == 0) weights_.read_f32(t.name, out, t.numel);
  else moments_->read_f32(t.name + (which == 1 ? ".exp_avg" : ".exp_avg_sq"), out, t.numel);
}

void load_checkpoint(const std::string& dir, GPT& model, AdamW* opt) {
  TD_ASSERT(model.num_params() == model_num_params(model.config()) && (opt == nullptr || opt->size() == model.num_params()));
  const CheckpointTensorReader r(dir, model.config(), opt != nullptr);  // every tensor checked before one is read
  Backend& be = model.backend();
  // As save_checkpoint: into the CPU backend's memory in place, a device's through one buffer
  // of the largest tensor.
  const bool in_place = be.name() == "cpu";
  size_t largest = 0;
  for (const auto& t : r.tensors()) largest = std::max(largest, t.numel);
  std::vector<float> buf(in_place ? 0 : largest);
  for_each_state_read(r.tensors().size(), opt != nullptr, [&](size_t i, int which) {
    const ParamTensor& t = r.tensors()[i];
    float* dst = (which == 0 ? model.params() : which == 1 ? opt->m() : opt->v()) + t.offset;
    if (in_place) return r.read(i, which, dst);
    r.read(i, which, buf.data());
    be.upload(dst, buf.data(), t.numel * sizeof(float));
  });
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
    if (checkpoint_is_kept(root, it->first)) continue;  // marked by the user: never deleted, not counted
    if (kept < keep && checkpoint_problem(it->second.string()).empty()) {
      kept++;
      continue;
    }
    fs::remove_all(it->second, ec);
  }
}

}  // namespace td
