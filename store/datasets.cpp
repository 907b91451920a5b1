// Store: prepared datasets registered for reuse (store.h "datasets", schema version 3).
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

std::string normal_path(const std::string& path) {
  TD_CHECK(!path.empty(), "the dataset path is empty; give the dataset directory");
  fs::path p = fs::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  return p.string();
}

constexpr const char* kColumns =
    "path, name, tokenizer, vocab_size, train_tokens, val_tokens, bytes_read, files, skipped,"
    " val_fraction, manifest, created, updated";

Dataset read_row(const Stmt& st) {
  Dataset d;
  d.path = st.col_text(0);
  d.name = st.col_text(1);
  d.tokenizer = st.col_text(2);
  d.vocab_size = st.col_int(3);
  d.train_tokens = st.col_int(4);
  d.val_tokens = st.col_int(5);
  d.bytes_read = st.col_int(6);
  d.files = st.col_int(7);
  d.skipped = st.col_int(8);
  d.val_fraction = st.col_double(9);
  d.manifest_json = st.col_text(10);
  d.created = st.col_double(11);
  d.updated = st.col_double(12);
  return d;
}

// The manifest's numbers; throws td::Error naming the field that is missing or has a bad type.
Dataset from_manifest(const std::string& path, const std::string& text) {
  const json m = json::parse(text, nullptr, false);
  const std::string where = "the manifest of dataset '" + path + "'";
  TD_CHECK(!m.is_discarded() && m.is_object(),
           where + " is not a JSON object; prepare the dataset again (traindeck-engine prepare)");
  TD_CHECK(m.value("format", std::string()) == "traindeck-dataset",
           where + " is not a traindeck-dataset manifest (\"format\" is missing or different)");
  auto need = [&](const json& parent, const char* key, const std::string& field) -> const json& {
    TD_CHECK(parent.is_object() && parent.contains(key), where + " has no \"" + field + "\"");
    return parent.at(key);
  };
  auto integer = [&](const json& v, const std::string& field) -> int64_t {
    TD_CHECK(v.is_number_integer(), where + ": \"" + field + "\" is not an integer");
    return v.get<int64_t>();
  };
  Dataset d;
  d.path = path;
  d.name = fs::path(path).filename().string();
  const json& tok = need(m, "tokenizer", "tokenizer");
  const json& kind = need(tok, "kind", "tokenizer.kind");
  TD_CHECK(kind.is_string(), where + ": \"tokenizer.kind\" is not a string");
  d.tokenizer = kind.get<std::string>();
  d.vocab_size = integer(need(tok, "vocab_size", "tokenizer.vocab_size"), "tokenizer.vocab_size");
  const json& splits = need(m, "splits", "splits");
  d.train_tokens = integer(need(need(splits, "train", "splits.train"), "tokens", "splits.train.tokens"),
                           "splits.train.tokens");
  d.val_tokens = integer(need(need(splits, "val", "splits.val"), "tokens", "splits.val.tokens"),
                         "splits.val.tokens");
  d.bytes_read = m.contains("bytes_read") ? integer(m["bytes_read"], "bytes_read") : 0;
  d.files = m.contains("sources") && m["sources"].is_array() ? static_cast<int64_t>(m["sources"].size()) : 0;
  d.skipped = m.contains("skipped") && m["skipped"].is_array() ? static_cast<int64_t>(m["skipped"].size()) : 0;
  d.val_fraction = m.contains("val_fraction") && m["val_fraction"].is_number() ? m["val_fraction"].get<double>() : 0.0;
  d.manifest_json = text;
  return d;
}

}  // namespace

Dataset Store::register_dataset(const std::string& path, const std::string& manifest_json) {
  Dataset d = from_manifest(normal_path(path), manifest_json);
  const double now = now_seconds();
  Transaction tx(db_);
  Stmt st(db_,
          "INSERT INTO datasets(path, name, tokenizer, vocab_size, train_tokens, val_tokens,"
          " bytes_read, files, skipped, val_fraction, manifest, created, updated)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
          " ON CONFLICT(path) DO UPDATE SET name = excluded.name, tokenizer = excluded.tokenizer,"
          " vocab_size = excluded.vocab_size, train_tokens = excluded.train_tokens,"
          " val_tokens = excluded.val_tokens, bytes_read = excluded.bytes_read,"
          " files = excluded.files, skipped = excluded.skipped,"
          " val_fraction = excluded.val_fraction, manifest = excluded.manifest,"
          " updated = excluded.updated");
  st.bind(1, d.path).bind(2, d.name).bind(3, d.tokenizer).bind(4, d.vocab_size)
      .bind(5, d.train_tokens).bind(6, d.val_tokens).bind(7, d.bytes_read).bind(8, d.files)
      .bind(9, d.skipped).bind(10, d.val_fraction).bind(11, d.manifest_json).bind(12, now)
      .bind(13, now).exec();
  tx.commit();
  auto stored = find_dataset(d.path);
  TD_CHECK(stored.has_value(), "dataset '" + d.path + "' was not stored in '" + path_ + "'");
  return *stored;
}

std::vector<Dataset> Store::list_datasets() {
  Stmt st(db_, std::string("SELECT ") + kColumns + " FROM datasets ORDER BY updated DESC, id DESC");
  std::vector<Dataset> out;
  while (st.step()) out.push_back(read_row(st));
  return out;
}

std::optional<Dataset> Store::find_dataset(const std::string& path) {
  Stmt st(db_, std::string("SELECT ") + kColumns + " FROM datasets WHERE path = ?");
  st.bind(1, normal_path(path));
  if (!st.step()) return std::nullopt;
  return read_row(st);
}

bool Store::forget_dataset(const std::string& path) {
  Stmt st(db_, "DELETE FROM datasets WHERE path = ?");
  st.bind(1, normal_path(path)).exec();
  return sqlite3_changes(db_) > 0;
}

}  // namespace td::store
