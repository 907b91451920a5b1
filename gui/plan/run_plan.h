// Plan beside measured for a run in the store: the planner's memory per rank, tokens/s and
// (data parallel) collective bytes and bus bandwidth next to the run's measurements, with the
// error in percent (engine/plan/compare.h, store/plan_measured.h; docs/planner.md). Qt Core only.
#pragma once

#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "engine/plan/compare.h"
#include "store/store.h"

namespace td::gui {

struct RunPlanComparison {
  std::vector<td::PlanVsMeasuredRow> rows;  // empty when `error` says why
  double mfu = 0;                           // the MFU the planned tokens/s assumes
  bool gpu = false;                         // the run trained on a GPU (memory: GPU high-water mark)
  QString error;                            // why there are no rows
};

/// Reads what `run_id` measured and plans its config (td::plan_vs_measured with the designer's
/// default MFU: td::kPlanCpuMfu or td::kPlanGpuMfu). Runs where the store lives (a StoreClient
/// job); reads a handful of rows. Throws td::Error for an unknown run.
RunPlanComparison comparePlanWithRun(td::store::Store& s, const std::string& run_id);

/// The translated name of a row ("Memory per rank (peak RSS)") by its key.
QString planRowLabel(const td::PlanVsMeasuredRow& row);
/// A value in its row's unit: bytes as KiB/MiB/GiB, rates in SI units; "–" when empty.
QString formatPlanValue(const std::optional<double>& v, const std::string& unit);
/// "+4.2 %" / "−12.0 %"; "–" when empty.
QString formatErrorPercent(const std::optional<double>& pct);

}  // namespace td::gui
