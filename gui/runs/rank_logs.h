// RankLogs: the log of any rank of any run, wherever it trained — this machine's run folder, the
// SSH node that ran the rank (one node, or the node of an SSH cluster that holds the rank), or a
// Slurm cluster's shared filesystem read through its login node. The Run page's Log tab lists a
// run's ranks and shows the one chosen; rank 0 is engine.log, rank r > 0 engine.rank<r>.log
// (remote/multinode.h, remote/slurm.h).
//
// Threading rule: GUI thread. The store lookup runs on the StoreClient's thread, the remote read
// on a RemoteTask of its own (never on the GUI thread); answers arrive as signals.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gui/core/store_client.h"
#include "gui/runs/remote_run_job.h"  // RemoteConnector
#include "remote/cluster.h"
#include "store/types.h"

namespace td::gui {

class RemoteTask;

/// Where one rank's log is (plain data, decided from the store's rows by rank_log_place).
struct RankLogPlace {
  bool local = true;          ///< on this machine: `path` is a local file
  std::string path;           ///< the log file (local, or on `node`)
  td::remote::NodeSpec node;  ///< the node to read it from (remote only; no secrets)
  std::string where;          ///< for people: "this machine", "gpu2", "slurm login node login1"
};

/// The log file name of `rank`: "engine.log" for rank 0, "engine.rank<r>.log" for r > 0.
std::string rank_log_name(int rank);

/// Where rank `rank`'s log of run `info` is. `remote` is the run's remote_runs row (nullopt for a
/// run on this machine: the log is beside its events file). Errors (nullopt, *error set, in words
/// for the Log tab): a rank outside 0..world_size-1, a run with no events file recorded, a stored
/// node or layout that cannot be read, a layout without the rank.
std::optional<RankLogPlace> rank_log_place(const td::store::RunInfo& info, const std::optional<td::store::RemoteRun>& remote,
                                           int rank, std::string* error);

class RankLogs : public QObject {
  Q_OBJECT
 public:
  /// Bytes read from the end of a log by default (the Log tab shows the tail).
  static constexpr qint64 kDefaultBytes = 256 * 1024;

  RankLogs(StoreClient* store, RemoteConnector connect, QObject* parent = nullptr);
  ~RankLogs() override;
  void setStoreClient(StoreClient* store);
  void setConnector(RemoteConnector connect) { connect_ = std::move(connect); }

  /// Reads the last `max_bytes` (> 0) of rank `rank`'s log of `run_id`. Answers with fetched() or
  /// failed() later (never from within the call). A newer fetch of the same run supersedes an
  /// older one still in flight (its answer is dropped).
  void fetch(const QString& run_id, int rank, qint64 max_bytes = kDefaultBytes);

 signals:
  /// `text`: the log's last bytes (UTF-8, invalid bytes replaced); `truncated` when the file is
  /// longer than what was read; `where` says where it was read ("gpu2:/work/runs/<id>/engine.rank3.log").
  void fetched(const QString& run_id, int rank, const QString& text, bool truncated, const QString& where);
  /// The log could not be read: message says why and what to do.
  void failed(const QString& run_id, int rank, const QString& message);

 private:
  void read(const QString& run_id, int rank, qint64 max_bytes, const RankLogPlace& place, quint64 serial);

  QPointer<StoreClient> store_;
  RemoteConnector connect_;
  std::map<QString, quint64> serial_;  // newest fetch of each run
  std::map<quint64, std::unique_ptr<RemoteTask>> tasks_;
  quint64 next_ = 0;
};

}  // namespace td::gui
