#include "gui/plan/run_plan.h"

#include <QCoreApplication>

#include <cmath>

#include "engine/config.h"
#include "gui/plan/format.h"
#include "store/plan_measured.h"

namespace td::gui {

namespace {
QString tr(const char* s) { return QCoreApplication::translate("td::gui::RunPlan", s); }
}  // namespace

RunPlanComparison comparePlanWithRun(td::store::Store& s, const std::string& run_id) {
  RunPlanComparison out;
  const td::store::MeasuredFigures f = td::store::measured_figures(s, run_id);
  if (f.config_json.empty()) {
    out.error = tr("The run has not started yet: no config to plan.");
    return out;
  }
  td::RunConfig c;
  try {
    c = td::parse_config(nlohmann::json::parse(f.config_json));
  } catch (const std::exception& e) {
    out.error = tr("This version cannot plan the run's config: %1").arg(QString::fromUtf8(e.what()));
    return out;
  }
  const td::RunMeasured& m = f.measured;
  out.gpu = c.train.device != "cpu";
  out.mfu = out.gpu ? td::kPlanGpuMfu : td::kPlanCpuMfu;
  out.rows = td::plan_vs_measured(c, m, out.mfu);
  return out;
}

QString planRowLabel(const td::PlanVsMeasuredRow& row) {
  if (row.key == "memory")
    return row.quantity.find("GPU") != std::string::npos ? tr("Memory per rank (GPU peak)") : tr("Memory per rank (peak RSS)");
  if (row.key == "tokens_per_s") return tr("Tokens per second");
  if (row.key == "comm_bytes") return tr("Collective bytes per step and rank");
  if (row.key == "busbw") return tr("Bus bandwidth (needed to hide / reached)");
  if (row.key == "storage") return tr("Storage read bandwidth per rank (needed / reached)");
  return QString::fromStdString(row.quantity);
}

QString formatPlanValue(const std::optional<double>& v, const std::string& unit) {
  if (!v) return QStringLiteral("–");
  if (unit == "bytes") return formatBytes(uint64_t(*v < 0 ? 0 : *v));
  if (unit == "bytes/s") return tr("%1B/s").arg(formatSi(*v));
  if (unit == "tokens/s") return tr("%1 tokens/s").arg(formatSi(*v));
  return formatSi(*v);
}

QString formatErrorPercent(const std::optional<double>& pct) {
  if (!pct) return QStringLiteral("–");
  return (*pct >= 0 ? QStringLiteral("+") : QStringLiteral("−")) + QString::number(std::abs(*pct), 'f', 1) + QStringLiteral(" %");
}

}  // namespace td::gui
