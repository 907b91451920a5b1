// The planner behind the model designer: validates a config document with the engine's own
// parser (engine/config.h), and estimates what it needs and how fast it runs on this machine
// with the engine's planner (engine/plan/plan.h) and calibrated sgemm peak
// (engine/metrics/calibrate.h). Qt Core only.
#pragma once

#include <QHash>
#include <QList>
#include <QMap>
#include <QObject>
#include <QPointer>
#include <QString>

#include <optional>

#include <nlohmann/json.hpp>

#include "engine/config.h"
#include "engine/plan/cluster.h"
#include "engine/plan/plan.h"

class QProcess;

namespace td::gui {

/// One config field as the engine documents it (td::config_field_docs()).
struct FieldInfo {
  QString path;           // "model.n_head"
  QString default_value;  // as JSON: "6", "true", "\"cpu\""
  QString range;          // "integer in [1, 1024]"
  QString meaning;        // one sentence
  QStringList families;   // empty: every model.family; else the ones it may be set in ("llama", "qwen2")
};

/// Where the MFU of an estimate comes from (PlanCheck::mfu_basis).
enum class MfuBasis {
  Runs,         // the median MFU of the last completed runs here (Planner::setMeasuredMfu)
  Calibration,  // the engine's measured share of this CPU's peak (`traindeck-engine calibrate`)
  Assumed,      // neither is known: Planner::kDefaultCpuMfu
};

/// A device `traindeck-engine devices` lists: "cpu" or a GPU the engine can start ("cuda:N").
struct EngineDevice {
  QString device;             // "cpu", "cuda:0"
  QString name;               // the CPU model, or the GPU's name ("NVIDIA H200")
  quint64 memory_bytes = 0;   // GPU memory; 0 for the CPU
  int compute_capability = 0; // major * 10 + minor for a GPU
};

/// Parses the JSON `traindeck-engine devices` prints. Returns the devices (cpu first); on a
/// document that is not the engine's, an empty list and *error says so. *cuda_error (optional)
/// gets the engine's reason for listing no (further) GPU.
QList<EngineDevice> parseEngineDevices(const QByteArray& json_text, QString* error, QString* cuda_error = nullptr);

/// What Planner::check() finds for one config document.
struct PlanCheck {
  /// Field path ("model.n_head", "train.lr", "data.path"; "(document)" or a section name for a
  /// document that is not an object of sections) -> the engine's message for it, without the
  /// leading "path: " (e.g. "value 0 is out of range: allowed [1, 1024]"). Empty when valid.
  /// A cross-field rule ("model.d_model: value 100 must be a multiple of model.n_head = 6") is
  /// keyed by the field the engine names AND by every field its message names (model.n_head).
  QMap<QString, QString> errors;
  /// True when the engine accepts the document as it is (errors is empty).
  bool valid = false;
  /// True when every model and train field is valid, so `plan` describes this document (only
  /// data.path may still be wrong: the plan does not depend on the data).
  bool has_plan = false;
  td::RunConfig config;  // the parsed config (defaults filled in; d_ff resolved); set when has_plan
  td::Plan plan;         // td::make_plan(config, 1); set when has_plan
  int threads = 0;       // CPU threads the run uses: train.threads, or all cores when it is 0
  /// This CPU's calibrated sgemm peak at `threads`, FLOP/s; empty when not calibrated yet.
  std::optional<double> peak_flops;
  double mfu = 0;           // the efficiency the estimate assumes: see mfu_basis
  MfuBasis mfu_basis = MfuBasis::Assumed;
  double tokens_per_s = 0;  // peak_flops * mfu / plan.flops_per_token; 0 when unknown
  double run_seconds = 0;   // train.steps * plan.tokens_per_step / tokens_per_s; 0 when unknown
};

/// A cluster plan of a checked config (Planner::planCluster).
struct ClusterCheck {
  std::optional<td::ClusterPlan> plan;  // empty when the config has no plan or the options are refused
  QString error;                        // the planner's message when it refused the options
};

/// Validation and estimates for the designer. Lives on the GUI thread: check() is arithmetic
/// (a few dozen parses of the small document, make_plan) and runs on each keystroke; the peak
/// comes from a memo of the calibration cache, read once per thread count. calibrate() runs the
/// engine as a QProcess and never blocks.
class Planner : public QObject {
  Q_OBJECT
 public:
  /// The MFU assumed for this engine on the CPU when neither a run here (setMeasuredMfu) nor a
  /// calibration (the engine's share of the peak, td::cached_engine_mfu) measured one.
  static constexpr double kDefaultCpuMfu = 0.5;

  explicit Planner(QObject* parent = nullptr);
  ~Planner() override;

  /// Validates `doc` (a run config: model/train/data sections) field by field with the engine's
  /// parser and, when the model and train fields are valid, plans it for one rank on this
  /// machine. Never throws.
  PlanCheck check(const nlohmann::json& doc) const;

  /// Every config field the engine knows, in the order of docs/config.md.
  static const QList<FieldInfo>& fieldDocs();
  /// The documentation of one field; a FieldInfo with an empty path for an unknown one.
  static FieldInfo fieldDoc(const QString& path);

  /// Per-field errors only (see PlanCheck::errors). Never throws.
  static QMap<QString, QString> fieldErrors(const nlohmann::json& doc);

  /// The MFU of completed runs on this machine (their median, from the store), used for tokens/s
  /// when in (0, 1]; anything else forgets it. Without it check() uses the engine's calibrated
  /// share of the peak at the run's threads (engineMfu), else kDefaultCpuMfu. Emits
  /// estimatesChanged() when it changes.
  void setMeasuredMfu(double mfu);
  /// The MFU a config with train.threads = 0 (all cores) is estimated at.
  double mfu() const;
  /// The engine's measured share of this CPU's peak with `threads` threads (0: all cores), from
  /// the calibration cache (memoised like peakFlops); empty when not calibrated.
  std::optional<double> engineMfu(int threads) const;

  /// This CPU's cached sgemm peak with `threads` threads (0: all cores), FLOP/s, read from the
  /// engine's calibration cache (memoised; reloadCalibration() forgets the memo).
  std::optional<double> peakFlops(int threads) const;
  /// Forgets the memo of the calibration cache and emits estimatesChanged().
  void reloadCalibration();
  /// The device catalogue (engine/plan/devices.h): the built-in devices merged with the user's
  /// devices.json, read at the first call and kept (the file is a few KB, like the calibration
  /// cache; reloadDevices() and a calibration read it again). When the user file is malformed
  /// the built-in catalogue is used and devicesError() says why.
  const td::DeviceCatalogue& devices() const;
  QString devicesError() const;
  /// Forgets the catalogue (read again at the next devices()) and emits estimatesChanged().
  void reloadDevices();
  /// The infrastructure plan (td::make_cluster_plan) of `check`'s config on devices() with
  /// options `o`: arithmetic only, microseconds. Never throws: a refused option (an unknown
  /// device, an MFU outside (0, 1]) gives the planner's message in ClusterCheck::error.
  ClusterCheck planCluster(const PlanCheck& check, const td::ClusterOptions& o) const;

  /// Threads a run with train.threads = `threads` uses: `threads`, or all cores when 0.
  static int resolveThreads(int threads);

  /// The engine executable calibrate() runs; default td::gui::engineExecutable().
  void setEngineExecutable(const QString& path) { engine_ = path; }
  QString engineExecutableInUse() const { return engine_; }

  /// Runs `<engine> calibrate --threads N` (N = resolveThreads(threads); about 2 s of sgemm and
  /// 2 s of the engine's training step)
  /// asynchronously, then re-reads the cache. Emits calibrationFinished() or calibrationFailed()
  /// (also for an engine that cannot be found or started). Ignored while one is running.
  void calibrate(int threads = 0);
  bool isCalibrating() const;
  /// Kills a running calibration (calibrationFailed() says it was cancelled).
  void cancelCalibration();
  /// Runs `<engine> devices` asynchronously (a few seconds on a machine with GPUs: the engine
  /// starts each one); devicesFound() follows, also with just the CPU when the engine cannot be
  /// run (devicesFound's cuda_error says why). Ignored while one is running.
  void probeDevices();

 signals:
  /// The cache now holds `peak_flops` (FLOP/s) for `threads`.
  void calibrationFinished(double peak_flops, int threads);
  /// A calibration could not run or failed; `message` says why and what to do.
  void calibrationFailed(const QString& message);
  /// The MFU or the calibration changed: estimates from check() differ now.
  void estimatesChanged();
  /// The devices the engine can train on (cpu first); `cuda_error` is the engine's reason for
  /// no (further) GPU, "" when it listed them all.
  void devicesFound(const QList<td::gui::EngineDevice>& devices, const QString& cuda_error);

 private:
  void finishCalibration(int exit_code, bool crashed);
  std::optional<double> measured_mfu_;
  QString engine_;
  mutable QHash<int, std::optional<double>> peak_memo_;
  mutable QHash<int, std::optional<double>> engine_mfu_memo_;
  QPointer<QProcess> devices_proc_;
  mutable std::optional<td::DeviceCatalogue> devices_;
  mutable QString devices_error_;
  QPointer<QProcess> proc_;
  int proc_threads_ = 0;
  bool cancelled_ = false;
};

}  // namespace td::gui

Q_DECLARE_METATYPE(td::gui::EngineDevice)
