// Store: queries over a run's rows (metrics, samples, checkpoints, warnings) and CSV export.
#include <ostream>

#include "engine/common/error.h"
#include "store/format.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

std::vector<MetricInfo> Store::list_metrics(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  Stmt st(db_,
          "SELECT n.name, m.rank, count(*), min(m.step), max(m.step), min(m.value), max(m.value),"
          " (SELECT l.value FROM metrics l WHERE l.run = m.run AND l.name = m.name AND"
          "   l.rank = m.rank ORDER BY l.step DESC LIMIT 1)"
          " FROM metrics m JOIN metric_names n ON n.id = m.name WHERE m.run = ?"
          " GROUP BY m.name, m.rank ORDER BY n.name, m.rank");
  st.bind(1, key);
  std::vector<MetricInfo> out;
  while (st.step()) {
    MetricInfo m;
    m.name = st.col_text(0);
    m.rank = static_cast<int>(st.col_int(1));
    m.count = st.col_int(2);
    m.first_step = st.col_int(3);
    m.last_step = st.col_int(4);
    m.min_value = st.col_double(5);
    m.max_value = st.col_double(6);
    m.last_value = st.col_double(7);
    out.push_back(std::move(m));
  }
  return out;
}

MetricSeries Store::metric_series(const std::string& run_id, const std::string& name, int rank,
                                  int64_t step_min, int64_t step_max) {
  const int64_t key = require_run(run_id);
  // One seek on the primary key (run, name, rank, step), then a sequential read.
  Stmt st(db_,
          "SELECT m.step, m.t, m.value, m.attempt FROM metrics m"
          " WHERE m.run = ?1 AND m.name = (SELECT id FROM metric_names WHERE name = ?2)"
          " AND m.rank = ?3 AND m.step BETWEEN ?4 AND ?5 ORDER BY m.step");
  st.bind(1, key).bind(2, name).bind(3, rank).bind(4, step_min).bind(5, step_max);
  MetricSeries s;
  while (st.step()) {
    s.step.push_back(st.col_int(0));
    s.t.push_back(st.col_double(1));
    s.value.push_back(st.col_double(2));
    s.attempt.push_back(static_cast<int>(st.col_int(3)));
  }
  return s;
}

int64_t Store::count_metrics(const std::string& run_id) {
  Stmt st(db_, "SELECT count(*) FROM metrics WHERE run = ?");
  st.bind(1, require_run(run_id));
  st.step();
  return st.col_int(0);
}

std::vector<Sample> Store::samples(const std::string& run_id) {
  Stmt st(db_,
          "SELECT step, rank, attempt, t, prompt, text FROM samples WHERE run = ?"
          " ORDER BY step, rank, id");
  st.bind(1, require_run(run_id));
  std::vector<Sample> out;
  while (st.step())
    out.push_back(Sample{st.col_int(0), static_cast<int>(st.col_int(1)),
                         static_cast<int>(st.col_int(2)), st.col_double(3), st.col_text(4),
                         st.col_text(5)});
  return out;
}

std::vector<Checkpoint> Store::checkpoints(const std::string& run_id) {
  Stmt st(db_,
          "SELECT step, rank, attempt, t, path, bytes FROM checkpoints WHERE run = ?"
          " ORDER BY step, rank");
  st.bind(1, require_run(run_id));
  std::vector<Checkpoint> out;
  while (st.step())
    out.push_back(Checkpoint{st.col_int(0), static_cast<int>(st.col_int(1)),
                             static_cast<int>(st.col_int(2)), st.col_double(3), st.col_text(4),
                             st.col_opt_int(5)});
  return out;
}

std::vector<RunWarning> Store::warnings(const std::string& run_id) {
  Stmt st(db_,
          "SELECT step, rank, attempt, t, code, message FROM warnings WHERE run = ? ORDER BY t, id");
  st.bind(1, require_run(run_id));
  std::vector<RunWarning> out;
  while (st.step())
    out.push_back(RunWarning{st.col_opt_int(0), static_cast<int>(st.col_int(1)),
                             static_cast<int>(st.col_int(2)), st.col_double(3), st.col_text(4),
                             st.col_text(5)});
  return out;
}

void Store::for_each_metric_row(const std::string& run_id, const std::function<void(const MetricRow&)>& fn) {
  const int64_t key = require_run(run_id);
  Stmt st(db_,
          "SELECT m.step, m.rank, m.attempt, m.t, n.name, m.value FROM metrics m"
          " JOIN metric_names n ON n.id = m.name WHERE m.run = ? ORDER BY m.step, m.rank, n.name");
  st.bind(1, key);
  MetricRow row;
  std::string name;
  while (st.step()) {
    row.step = st.col_int(0);
    row.rank = static_cast<int>(st.col_int(1));
    row.attempt = static_cast<int>(st.col_int(2));
    row.t = st.col_double(3);
    name = st.col_text(4);
    row.name = name;
    row.value = st.col_double(5);
    fn(row);
  }
}

int64_t Store::export_metrics_csv(const std::string& run_id, std::ostream& out, bool run_id_column, bool header) {
  require_run(run_id);  // an unknown run fails before the header is written
  if (header) out << (run_id_column ? "run_id," : "") << "step,rank,attempt,t,name,value\n";
  const std::string prefix = run_id_column ? csv_field(run_id) + "," : std::string();
  int64_t rows = 0;
  std::string line;
  for_each_metric_row(run_id, [&](const MetricRow& r) {
    line = prefix;
    line += std::to_string(r.step);
    line += ',';
    line += std::to_string(r.rank);
    line += ',';
    line += std::to_string(r.attempt);
    line += ',';
    line += format_number(r.t);
    line += ',';
    line += csv_field(std::string(r.name));
    line += ',';
    line += format_number(r.value);
    line += '\n';
    out << line;
    ++rows;
  });
  TD_CHECK(out.good(), "writing the CSV export of run '" + run_id + "' failed; check the output file and disk space");
  return rows;
}

}  // namespace td::store
