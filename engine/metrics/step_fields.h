// The step event's schema: ONE table of every figure a `step` event carries (and the figures of
// the `eval` and `checkpoint` events), which everything else reads:
//  * the trainer fills a StepFigures by field and writes the event with step_event_json();
//    a data-parallel step's per-rank figures travel between ranks packed by this table
//    (RankFigures::pack / unpack), so a new per-rank field needs no new buffer layout;
//  * the store's ingest (store/ingest.cpp) stores every field that has a `metric` under that
//    name, and reports a field the table does not know;
//  * the dashboard (gui/charts/dashboard.cpp) draws every field that names a `chart`;
//  * `traindeck-engine events --markdown` prints the tables of docs/events.md ("Step fields").
//
// Adding a field: a row in kEventFields below (key, type, unit, scope, stored metric, meaning,
// chart), and its value in the trainer: `figures.set(step_field("key"), v)` for a figure of the
// step, `mine.set(rank_field("key"), v)` for one of each rank (engine/train/training_run.cpp;
// collectives and GPU telemetry in engine/train/step_figures.cpp). Then
// regenerate docs/events.md. step_field()/rank_field() are consteval: a key the table does not
// have is a compile error. The store's metric name of an existing field never changes (old
// stores must stay readable); a label is English, translated by the GUI (context
// "td::gui::Dashboard": `TD_TRANSLATE_NOOP` is QT_TRANSLATE_NOOP for lupdate, see
// gui/look/CMakeLists.txt).
//
// No Qt, no I/O here (the ingest and the fuzzers use it header-only); the JSON and Markdown
// writers are in step_fields.cpp (td_engine).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

/// Marks a chart label for lupdate (an alias of QT_TRANSLATE_NOOP given to lupdate with
/// -tr-function-alias); the text itself is what it leaves.
#define TD_TRANSLATE_NOOP(context, text) text

namespace td {

enum class EventKind : uint8_t { Step, Eval, Checkpoint };
/// The JSON type of a field. Int: a JSON integer (counts, bytes); Number: a JSON number
/// (null where the field is `nullable`); String; Array (the step's `ranks`).
enum class FieldType : uint8_t { Int, Number, String, Array };
/// Global: a member of the event itself (figures of the whole step, or rank 0's process);
/// Rank: a member of each entry of a data-parallel step's `ranks` array (that rank's figure,
/// stored as a metric of that rank: the metrics table's `rank` column).
enum class FieldScope : uint8_t { Global, Rank };
/// Where a charted field is drawn in its chart: the left y axis, the right one, or as a second
/// scale on the right axis of the chart's first left line (a field that is that line times a
/// constant of the run, e.g. MFU = flops_per_token * tokens_per_s / peak: one line, two scales).
enum class ChartAxis : uint8_t { Left, Right, RightScale };
enum class ChartStyle : uint8_t { Line, Markers };

/// How the dashboard draws a field. chart == nullptr: not charted.
struct ChartLine {
  const char* chart = nullptr;  // the dashboard chart's name ("loss", "throughput", ...)
  const char* label = nullptr;  // legend text, English (translated in "td::gui::Dashboard")
  ChartAxis axis = ChartAxis::Left;
  ChartStyle style = ChartStyle::Line;
  bool all_ranks = false;  // one series per rank the run has (else rank 0's only)
  bool smooth = false;     // a noisy series: the smoothing slider applies (loss, throughput)
};

/// One field of the step (or eval) event.
struct EventField {
  EventKind event = EventKind::Step;
  FieldScope scope = FieldScope::Global;
  const char* key = nullptr;     // JSON member name (in the event, or in a `ranks` entry)
  FieldType type = FieldType::Number;
  const char* unit = "";         // "ms", "bytes", "tokens/s", "nats/token", ... ("" dimensionless)
  const char* metric = nullptr;  // the store's metric name; nullptr: not a metric row (keys, host)
  const char* when = "";         // "" in every step, else when it is there ("on a GPU")
  bool nullable = false;         // null (and no metric row) when unknown
  const char* meaning = "";      // for docs/events.md
  ChartLine chart{};
};

namespace step_fields_detail {
constexpr ChartLine none{};
constexpr ChartLine line(const char* chart, const char* label, ChartAxis axis = ChartAxis::Left, bool all_ranks = false,
                         bool smooth = false, ChartStyle style = ChartStyle::Line) {
  return ChartLine{chart, label, axis, style, all_ranks, smooth};
}
constexpr EventKind S = EventKind::Step;
constexpr FieldScope G = FieldScope::Global, R = FieldScope::Rank;
constexpr FieldType I = FieldType::Int, N = FieldType::Number;

// clang-format off
inline constexpr EventField kTable[] = {
    // event, scope, key, type, unit, metric, when, nullable, meaning, chart
    {S, G, "step", I, "", nullptr, "", false,
     "the optimizer step just completed, 1-based (the metric rows' step)", none},
    {S, G, "tokens_seen", I, "tokens", "tokens_seen", "", false,
     "tokens trained on so far, all ranks (the charts' Tokens axis)", none},
    {S, G, "loss", N, "nats/token", "loss", "", false,
     "mean cross-entropy over the global batch", line("loss", TD_TRANSLATE_NOOP("td::gui::Dashboard", "train loss"), ChartAxis::Left, false, true)},
    {S, G, "lr", N, "", "lr", "", false,
     "learning rate of this step's update", line("optimizer", TD_TRANSLATE_NOOP("td::gui::Dashboard", "lr"))},
    {S, G, "grad_norm", N, "", "grad_norm", "", false,
     "L2 norm of the whole gradient before clipping",
     line("optimizer", TD_TRANSLATE_NOOP("td::gui::Dashboard", "grad norm (before clipping)"), ChartAxis::Right, false, true)},
    {S, G, "step_ms", N, "ms", "step_ms", "", false,
     "wall time of the step on rank 0, from its start to its last kernel", none},
    {S, G, "tokens_per_s", N, "tokens/s", "tokens_per_s", "", false,
     "tokens of the global batch / the step's wall time (step_ms)", line("throughput", TD_TRANSLATE_NOOP("td::gui::Dashboard", "tokens/s"), ChartAxis::Left, false, true)},
    {S, G, "mfu", N, "0..1", "mfu", "", true,
     "model FLOPs utilisation, flops_per_token * tokens_per_s / (world_size * peak_flops) (PaLM, Chowdhery et al. 2022, "
     "appendix B); null when the peak is unknown",
     line("throughput", nullptr, ChartAxis::RightScale)},
    {S, G, "rss_bytes", I, "bytes", "rss_bytes", "", false,
     "resident memory of rank 0's process", line("memory", TD_TRANSLATE_NOOP("td::gui::Dashboard", "process RSS"), ChartAxis::Left, true)},
    {S, G, "cpu_util_pct", N, "%", "cpu_util_pct", "", false,
     "CPU utilization of rank 0's process over the step, in % of one core as top counts it (its default Irix mode: 100 = one core busy, "
     "at most 100 x the cores it may use; about 100 x train.threads when the GEMMs keep every thread busy): 100 x its "
     "user + system CPU time in the step (getrusage(RUSAGE_SELF), all its threads) / step_ms",
     line("memory", TD_TRANSLATE_NOOP("td::gui::Dashboard", "process CPU"), ChartAxis::Right, false, true)},
    // GPU telemetry from NVML (engine/metrics/nvml.h, docs/cuda.md "GPU telemetry"): the GPU of rank 0
    // (of each rank: the ranks entries), read after the step at most every 0.1 s; left out where
    // NVML is not (no NVIDIA driver), a reading fails, and in CPU runs (unless TRAINDECK_NVML_DEVICE).
    {S, G, "gpu_util_pct", N, "%", "gpu_util_pct", "on a GPU", false,
     "NVML's GPU utilization: % of its last sample period (1/6 s to 1 s) in which a kernel ran (not how busy the SMs were)",
     line("gpu", TD_TRANSLATE_NOOP("td::gui::Dashboard", "GPU utilization"), ChartAxis::Left, false, true)},
    {S, G, "gpu_mem_used_bytes", I, "bytes", "gpu_mem_used_bytes", "on a GPU", false,
     "device memory in use on the GPU by all its processes (NVML): gpu_mem_bytes plus the CUDA context, libraries and others", none},
    {S, G, "gpu_power_w", N, "W", "gpu_power_w", "on a GPU", false,
     "the board's power draw (NVML's milliwatts / 1000)",
     line("gpu", TD_TRANSLATE_NOOP("td::gui::Dashboard", "GPU power"), ChartAxis::Right, false, true)},
    {S, G, "gpu_temp_c", N, "°C", "gpu_temp_c", "on a GPU", false,
     "the GPU die's temperature (NVML)", none},
    {S, G, "gpu_sm_clock_mhz", N, "MHz", "gpu_sm_clock_mhz", "on a GPU", false,
     "the SM clock now (NVML)", none},
    {S, G, "gpu_throttle", I, "", "gpu_throttle", "on a GPU", false,
     "why the clocks are held down now: NVML's clocks throttle (event) reason bits, 0 none, 0x4 sw_power_cap, 0x8 hw_slowdown, "
     "0x20 sw_thermal_slowdown, 0x40 hw_thermal_slowdown, ... (gpu_throttle_reasons names them)", none},
    {S, G, "gpu_throttle_reasons", FieldType::String, "", nullptr, "on a GPU", false,
     "gpu_throttle's bits by name, comma-separated, lowest first (\"sw_power_cap,hw_thermal_slowdown\"), or \"none\"", none},
    {S, G, "gpu_mem_bytes", I, "bytes", "gpu_mem_bytes", "on a GPU", false,
     "device memory the engine holds after the step, from its allocations through the CUDA runtime",
     line("memory", TD_TRANSLATE_NOOP("td::gui::Dashboard", "GPU memory"), ChartAxis::Left, true)},
    {S, G, "gpu_mem_peak_bytes", I, "bytes", "gpu_mem_peak_bytes", "on a GPU", false,
     "the high-water mark of gpu_mem_bytes since the start", none},
    // The input pipeline (engine/data/loader.h LoaderStats): rank 0's loader in this step.
    {S, G, "data_wait_ms", N, "ms", "data_wait_ms", "", false,
     "time the step waited for the data loader: its next_batch() calls blocked on the prefetch thread or reading",
     none},
    {S, G, "data_wait_pct", N, "%", "data_wait_pct", "", false,
     "data_wait_ms as a share of step_ms (100 * data_wait_ms / step_ms); a run whose recent steps wait 5 % or more of their time is input-bound (store/input_pipeline.h kInputBoundWaitPct)",
     line("input", TD_TRANSLATE_NOOP("td::gui::Dashboard", "waiting for data"), ChartAxis::Left, false, true)},
    {S, G, "data_read_bytes", I, "bytes", "data_read_bytes", "", false,
     "bytes of the step's batches read from the dataset's shards (pread; the page cache may serve them): "
     "micro_batch * grad_accum windows of (seq_len + 1) tokens of the shard's token width",
     none},
    {S, G, "data_read_mb_s", N, "MB/s", "data_read_mb_s", "", true,
     "read throughput of those reads: data_read_bytes / their wall time, in 10^6 bytes/s; null when no read took "
     "measurable time",
     line("input", TD_TRANSLATE_NOOP("td::gui::Dashboard", "read throughput"), ChartAxis::Right, false, true)},
    {S, G, "ranks", FieldType::Array, "", nullptr, "in a data-parallel run", false,
     "one object per rank, in rank order, with the fields of scope \"per rank\" below", none},

    // Each entry of `ranks` (docs/distributed.md): this step's figures of that rank.
    {S, R, "rank", I, "", nullptr, "", false,
     "the rank (the metric rows' rank)", none},
    {S, R, "host", FieldType::String, "", nullptr, "", false,
     "the host the rank runs on", none},
    {S, R, "gpu_util_pct", N, "%", "rank_gpu_util_pct", "on a GPU", false, "this rank's GPU's utilization (as gpu_util_pct)",
     line("gpu", TD_TRANSLATE_NOOP("td::gui::Dashboard", "GPU utilization"), ChartAxis::Left, true, true)},
    {S, R, "gpu_mem_used_bytes", I, "bytes", "rank_gpu_mem_used_bytes", "on a GPU", false,
     "device memory in use on this rank's GPU (as gpu_mem_used_bytes)", none},
    {S, R, "gpu_power_w", N, "W", "rank_gpu_power_w", "on a GPU", false, "this rank's GPU's power draw",
     line("gpu", TD_TRANSLATE_NOOP("td::gui::Dashboard", "GPU power"), ChartAxis::Right, true, true)},
    {S, R, "gpu_temp_c", N, "°C", "rank_gpu_temp_c", "on a GPU", false, "this rank's GPU's temperature", none},
    {S, R, "gpu_sm_clock_mhz", N, "MHz", "rank_gpu_sm_clock_mhz", "on a GPU", false, "this rank's GPU's SM clock", none},
    {S, R, "gpu_throttle", I, "", "rank_gpu_throttle", "on a GPU", false, "this rank's GPU's throttle reason bits (as gpu_throttle)", none},
    {S, R, "tokens_per_s", N, "tokens/s", "rank_tokens_per_s", "", false,
     "tokens of this rank's slice of the global batch / the step's wall time on this rank",
     line("throughput", TD_TRANSLATE_NOOP("td::gui::Dashboard", "tokens/s"), ChartAxis::Left, true, true)},
    {S, R, "comm_bytes_sent", I, "bytes", "comm_bytes_sent", "", false,
     "payload bytes this rank's collectives sent in the step, from the algorithm (ring all-reduce: 2(n-1)/n S for a buffer "
     "of S bytes; ring reduce-scatter and all-gather: (n-1)/n S), not measured at the socket",
     line("network", TD_TRANSLATE_NOOP("td::gui::Dashboard", "collective bytes sent"), ChartAxis::Left, true)},
    {S, R, "comm_bytes_received", I, "bytes", "comm_bytes_received", "", false,
     "payload bytes this rank's collectives received in the step (as comm_bytes_sent)", none},
    {S, R, "comm_ms", N, "ms", "comm_ms", "", false,
     "wall time inside collectives (waiting for slower ranks included)", none},
    {S, R, "all_reduce_bytes", I, "bytes", "all_reduce_bytes", "", false,
     "the part of comm_bytes_sent sent by all-reduces (the same ring formulas; engine/plan/cluster.h collective_bytes_by_kind "
     "plans it per ZeRO stage)",
     line("network", TD_TRANSLATE_NOOP("td::gui::Dashboard", "all-reduce bytes"), ChartAxis::Left, true)},
    {S, R, "all_reduce_ms", N, "ms", "all_reduce_ms", "", false,
     "the part of comm_ms spent in all-reduces", none},
    {S, R, "reduce_scatter_bytes", I, "bytes", "reduce_scatter_bytes", "", false,
     "the part of comm_bytes_sent sent by reduce-scatters (the same ring formulas; engine/plan/cluster.h collective_bytes_by_kind "
     "plans it per ZeRO stage)",
     line("network", TD_TRANSLATE_NOOP("td::gui::Dashboard", "reduce-scatter bytes"), ChartAxis::Left, true)},
    {S, R, "reduce_scatter_ms", N, "ms", "reduce_scatter_ms", "", false,
     "the part of comm_ms spent in reduce-scatters", none},
    {S, R, "all_gather_bytes", I, "bytes", "all_gather_bytes", "", false,
     "the part of comm_bytes_sent sent by all-gathers (the same ring formulas; engine/plan/cluster.h collective_bytes_by_kind "
     "plans it per ZeRO stage)",
     line("network", TD_TRANSLATE_NOOP("td::gui::Dashboard", "all-gather bytes"), ChartAxis::Left, true)},
    {S, R, "all_gather_ms", N, "ms", "all_gather_ms", "", false,
     "the part of comm_ms spent in all-gathers", none},
    {S, R, "busbw_gb_s", N, "GB/s", "busbw_gb_s", "", false,
     "achieved bus bandwidth (10^9 bytes/s) as nccl-tests defines it (doc/PERFORMANCE.md of NVIDIA/nccl-tests): algbw = S / t, "
     "busbw = algbw * 2(n-1)/n for all-reduce and algbw * (n-1)/n for reduce-scatter and all-gather, over the step's "
     "collectives: sum(busbw * t) / sum(t)",
     line("network", TD_TRANSLATE_NOOP("td::gui::Dashboard", "bus bandwidth"), ChartAxis::Right, true, true)},
    {S, R, "rss_bytes", I, "bytes", "rank_rss_bytes", "", false,
     "this rank's resident memory", none},
    {S, R, "cpu_util_pct", N, "%", "rank_cpu_util_pct", "", false,
     "this rank's process's CPU utilization over the step (as cpu_util_pct)",
     line("memory", TD_TRANSLATE_NOOP("td::gui::Dashboard", "process CPU"), ChartAxis::Right, true, true)},
    {S, R, "step_ms", N, "ms", "rank_step_ms", "", false,
     "wall time of the step on this rank, from its start to its last kernel (as step_ms)", none},
    {S, R, "compute_ms", N, "ms", "rank_compute_ms", "", false,
     "this rank's step_ms outside collectives (step_ms - comm_ms: forward, backward, optimizer, data loading): the ranks "
     "wait for the slowest in the collectives, so its compute_ms is the largest (the straggler the Run page names)",
     none},
    {S, R, "data_wait_ms", N, "ms", "rank_data_wait_ms", "", false,
     "time this rank's step waited for its data loader (as data_wait_ms)", none},

    // The eval event's figure, drawn with the loss.
    {EventKind::Eval, G, "step", I, "", nullptr, "", false, "the step evaluated after", none},
    {EventKind::Eval, G, "val_loss", N, "nats/token", "val_loss", "", false,
     "mean cross-entropy over eval_batches batches of the validation split",
     line("loss", TD_TRANSLATE_NOOP("td::gui::Dashboard", "val loss"), ChartAxis::Left, false, false, ChartStyle::Markers)},

    // The checkpoint event (rank 0 writes it): where, how big, how fast, and what it cost the
    // training. Its figures are metrics at the checkpoint's step.
    {EventKind::Checkpoint, G, "step", I, "", nullptr, "", false, "the step checkpointed", none},
    {EventKind::Checkpoint, G, "path", FieldType::String, "", nullptr, "", false, "the checkpoint's directory (absolute)", none},
    {EventKind::Checkpoint, G, "bytes", I, "bytes", nullptr, "", false,
     "bytes of all its files (kept in the store's checkpoints table)", none},
    {EventKind::Checkpoint, G, "write_s", N, "s", "checkpoint_write_s", "", false,
     "wall time writing the checkpoint: serialising, writing and fsyncing its files, SHA256SUMS, the rename", none},
    {EventKind::Checkpoint, G, "write_mb_s", N, "MB/s", "checkpoint_write_mb_s", "", true,
     "write throughput: bytes / write_s, in 10^6 bytes/s",
     line("checkpoints", TD_TRANSLATE_NOOP("td::gui::Dashboard", "write throughput"), ChartAxis::Left, false, false,
          ChartStyle::Markers)},
    {EventKind::Checkpoint, G, "pause_s", N, "s", "checkpoint_pause_s", "", false,
     "time training stood still for the checkpoint on rank 0: write_s plus gathering a sharded optimizer state, "
     "pruning old checkpoints and fsyncing the events file",
     line("checkpoints", TD_TRANSLATE_NOOP("td::gui::Dashboard", "training paused"), ChartAxis::Right, false, false,
          ChartStyle::Markers)},
};
// clang-format on
}  // namespace step_fields_detail

/// The table. Order: the event's fields, then each `ranks` entry's, then eval's; a chart draws
/// its fields in this order. A RightScale field has no legend label (the chart's right axis
/// title names it).
inline constexpr auto& kEventFields = step_fields_detail::kTable;
inline constexpr size_t kEventFieldCount = std::size(kEventFields);

/// The table's index of a field: a key the table lacks in that event and scope is a compile
/// error (consteval), so the trainer cannot write a field the ingest and the docs do not know.
struct FieldIndex {
  size_t i;
};
namespace step_fields_detail {
// Not constexpr: reaching it in a constant evaluation is the compile error.
inline void no_such_field_in_kEventFields() {}
consteval FieldIndex find(EventKind e, FieldScope s, std::string_view key) {
  for (size_t i = 0; i < kEventFieldCount; ++i)
    if (kEventFields[i].event == e && kEventFields[i].scope == s && std::string_view(kEventFields[i].key) == key) return {i};
  no_such_field_in_kEventFields();
  return {kEventFieldCount};
}
}  // namespace step_fields_detail
/// A field of the step event itself.
consteval FieldIndex step_field(std::string_view key) { return step_fields_detail::find(EventKind::Step, FieldScope::Global, key); }
/// A field of each entry of the step event's `ranks`.
consteval FieldIndex rank_field(std::string_view key) { return step_fields_detail::find(EventKind::Step, FieldScope::Rank, key); }
/// A field of the checkpoint event.
consteval FieldIndex checkpoint_field(std::string_view key) {
  return step_fields_detail::find(EventKind::Checkpoint, FieldScope::Global, key);
}

/// The field `key` of event `e` and scope `s`, or nullptr when the table does not know it
/// (the ingest's check: a field outside the table is reported, its value not stored).
constexpr const EventField* find_event_field(EventKind e, FieldScope s, std::string_view key) {
  for (const EventField& f : kEventFields)
    if (f.event == e && f.scope == s && std::string_view(f.key) == key) return &f;
  return nullptr;
}

/// The numeric fields (Int or Number) of scope `s` of the step event, in table order: what a
/// step stores as metrics (Global) and what each rank sends in the per-rank buffer (Rank, keys
/// such as `rank` excluded: fields with a metric).
template <FieldScope S>
constexpr size_t step_metric_count() {
  size_t n = 0;
  for (const EventField& f : kEventFields)
    if (f.event == EventKind::Step && f.scope == S && f.metric) ++n;
  return n;
}
template <FieldScope S>
constexpr std::array<FieldIndex, step_metric_count<S>()> step_metric_fields() {
  std::array<FieldIndex, step_metric_count<S>()> a{};
  size_t n = 0;
  for (size_t i = 0; i < kEventFieldCount; ++i)
    if (kEventFields[i].event == EventKind::Step && kEventFields[i].scope == S && kEventFields[i].metric) a[n++] = {i};
  return a;
}
/// The step event's metric fields (loss, lr, ...) and each rank's (rank_tokens_per_s, ...).
inline constexpr auto kStepMetricFields = step_metric_fields<FieldScope::Global>();
inline constexpr auto kRankMetricFields = step_metric_fields<FieldScope::Rank>();

/// Values of some fields of one step (or of one rank's part of it), by field. A field never
/// set is left out of the event; set_null() writes JSON null (a nullable field whose value is
/// unknown: no metric row).
class StepFigures {
 public:
  void set(FieldIndex f, double v) {
    v_[f.i] = v;
    state_[f.i] = kValue;
  }
  void set_null(FieldIndex f) { state_[f.i] = kNull; }
  void set(FieldIndex f, std::optional<double> v) { v ? set(f, *v) : set_null(f); }
  bool has(FieldIndex f) const { return state_[f.i] == kValue; }
  double get(FieldIndex f) const { return v_[f.i]; }

  /// The per-rank metric fields (kRankMetricFields) as doubles, in table order, NaN where not
  /// set: the buffer every rank contributes to the step's all-gather.
  std::array<double, kRankMetricFields.size()> pack_rank() const;
  /// The inverse of pack_rank() (NaN: left unset).
  static StepFigures unpack_rank(const double* packed);

 private:
  enum : uint8_t { kUnset, kValue, kNull };
  std::array<double, kEventFieldCount> v_{};
  std::array<uint8_t, kEventFieldCount> state_{};
};

/// The fields of a step event (without the common ones EventWriter adds) from the step's
/// figures (Global fields) and, in a data-parallel run, each rank's (Rank fields, `rank` and
/// `host` added from the index and `hosts`; empty: no `ranks`). Int fields are written as JSON
/// integers (exact below 2^53), Number fields as JSON numbers. Throws td::Error when a Global
/// field that is not nullable is set to a non-finite value (JSON has no NaN).
nlohmann::json step_event_json(const StepFigures& step, const std::vector<StepFigures>& ranks = {},
                               const std::vector<std::string>& hosts = {});

/// The numeric fields (Int, Number) of event `e`'s Global scope from `figures`, as
/// step_event_json writes them (the caller adds string fields such as a checkpoint's path).
nlohmann::json event_figures_json(EventKind e, const StepFigures& figures);

/// The table as Markdown: the "Step fields" section of docs/events.md (between its
/// `<!-- step-fields:begin -->` and `<!-- step-fields:end -->` lines, both included), printed by
/// `traindeck-engine events --markdown`.
std::string step_fields_markdown();

/// The table as JSON ({"fields": [{event, scope, key, type, unit, metric, when, nullable,
/// meaning, chart}...]}), printed by `traindeck-engine events`: for programs that read the events.
nlohmann::json step_fields_json();

const char* to_string(FieldType t);
const char* to_string(FieldScope s);
const char* to_string(EventKind e);

}  // namespace td
