// manifest.json of a dataset directory: read and checked (manifest.h).
#include "engine/data/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "engine/common/error.h"
#include "engine/common/fileio.h"

namespace td {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxManifestBytes = 64u << 20;
constexpr int64_t kMaxVocab = 1 << 24;

}  // namespace

const std::vector<DatasetManifest::Shard>& DatasetManifest::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "val") return val;
  fail("data split '" + name + "' is not known: use train or val");
}

DatasetManifest parse_dataset_manifest(std::string_view text, const std::string& where) {
  auto damaged = [&](const std::string& what) -> Error {
    return Error("'" + where + "' is damaged: " + what + "; delete the dataset directory and prepare it again");
  };
  DatasetManifest m;
  m.doc = json::parse(text, nullptr, false);
  if (m.doc.is_discarded()) throw damaged("it is not valid JSON");
  if (!m.doc.is_object()) throw damaged("it is not a JSON object");
  auto tok = m.doc.find("tokenizer");
  if (tok == m.doc.end() || !tok->is_object()) throw damaged("it has no \"tokenizer\" object");
  // An integer field of the tokenizer in [lo, hi], or `absent` when it is missing.
  auto int_field = [&](const char* key, int64_t lo, int64_t hi, int absent) -> int {
    auto it = tok->find(key);
    if (it == tok->end()) {
      if (absent == INT32_MIN) throw damaged(std::string("tokenizer.") + key + " is missing");
      return absent;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
      throw damaged(std::string("tokenizer.") + key + " is " + it->dump() + ", not an integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<int>(it->get<int64_t>());
  };
  auto kind = tok->find("kind");
  if (kind == tok->end() || !kind->is_string() || (*kind != "byte" && *kind != "bpe"))
    throw damaged("tokenizer.kind is " + (kind == tok->end() ? std::string("missing") : kind->dump()) +
                  ", expected \"byte\" or \"bpe\"");
  m.tokenizer_kind = kind->get<std::string>();
  m.vocab_size = int_field("vocab_size", 1, kMaxVocab, INT32_MIN);
  m.eot_id = int_field("eot_id", 0, m.vocab_size - 1, -1);
  m.newline_id = int_field("newline_id", 0, m.vocab_size - 1, -1);
  if (m.tokenizer_kind == "bpe") {
    auto mf = tok->find("model_file");
    m.model_file = "tokenizer.model";
    if (mf != tok->end()) {
      if (!mf->is_string() || !is_plain_file_name(mf->get_ref<const std::string&>()))
        throw damaged("tokenizer.model_file is " + mf->dump() + ", not a file name in the dataset directory");
      m.model_file = mf->get<std::string>();
    }
  }
  auto splits = m.doc.find("splits");
  if (splits != m.doc.end() && !splits->is_object()) throw damaged("\"splits\" is not an object");
  for (const char* name : {"train", "val"}) {
    if (splits == m.doc.end()) break;
    auto sp = splits->find(name);
    if (sp == splits->end()) continue;
    if (!sp->is_object()) throw damaged(std::string("splits.") + name + " is not an object");
    auto shards = sp->find("shards");
    if (shards == sp->end()) continue;
    if (!shards->is_array()) throw damaged(std::string("splits.") + name + ".shards is not a list");
    std::vector<DatasetManifest::Shard>& out = name[0] == 't' ? m.train : m.val;
    for (const json& s : *shards) {
      auto file = s.is_object() ? s.find("file") : s.end();
      if (!s.is_object() || file == s.end() || !file->is_string() ||
          !is_plain_file_name(file->get_ref<const std::string&>()))
        throw damaged(std::string("a shard of splits.") + name + ".shards is " + s.dump(-1, ' ', false, json::error_handler_t::replace) +
                      ", not {\"file\": a file name in the dataset directory}");
      DatasetManifest::Shard sh;
      sh.file = file->get<std::string>();
      auto t = s.find("tokens");
      if (t != s.end()) {
        if (!t->is_number_unsigned() && !(t->is_number_integer() && t->get<int64_t>() >= 0))
          throw damaged("shard " + sh.file + " has tokens " + t->dump() + ", not a count");
        sh.tokens = t->get<uint64_t>();
      }
      out.push_back(std::move(sh));
    }
  }
  return m;
}

DatasetManifest read_dataset_manifest(const std::string& dataset_dir) {
  const std::string path = (fs::path(dataset_dir) / "manifest.json").string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT)
    fail("'" + dataset_dir + "' holds no dataset (no manifest.json): run traindeck-engine prepare --out " +
         dataset_dir + " first");
  if (fd < 0) fail_errno("cannot open the dataset manifest (a symlink is refused)", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxManifestBytes) {
    ::close(fd);
    fail("'" + path + "' is not a regular file of at most 64 MiB; delete the dataset directory and prepare it again");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t r = ::read(fd, text.data() + got, text.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  text.resize(got);
  return parse_dataset_manifest(text, path);
}

}  // namespace td
