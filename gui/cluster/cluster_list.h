// ClusterList: the saved clusters as the store has them, for the Run page and the designer.
//
// reload() reads every `clusters` row through a StoreClient job and parses it with
// td::remote::cluster_from_json; changed() follows on the GUI thread. A row that does not parse
// is kept out of clusters() and reported in problems() (it stays in the store).
// "This machine" (the local cluster, no nodes) is not a stored row: localName() names it and
// cluster(localName()) gives it, so a Run page can list localName() + names().
//
// Threading rule: GUI thread only (store access through StoreClient jobs, never waited on).
#pragma once

#include <QObject>
#include <QPointer>
#include <QStringList>

#include <map>
#include <optional>

#include "remote/cluster.h"

namespace td::gui {

class StoreClient;

class ClusterList : public QObject {
  Q_OBJECT
 public:
  /// `store` may be nullptr (empty list) until setStoreClient(). Loads at once when given.
  explicit ClusterList(StoreClient* store, QObject* parent = nullptr);

  void setStoreClient(StoreClient* store);
  /// Re-reads the saved clusters (asynchronous: changed() or error() follows).
  void reload();

  /// The local cluster's display name, tr("This machine").
  static QString localName();
  /// Saved cluster names in the store's order (by name), without localName().
  QStringList names() const;
  /// The saved cluster `name`, or the local one for localName(); nullopt when unknown.
  std::optional<td::remote::ClusterSpec> cluster(const QString& name) const;
  /// "name: message" for each stored row that does not parse.
  QStringList problems() const { return problems_; }
  /// Whether a reload has delivered since the last setStoreClient().
  bool loaded() const { return loaded_; }

 signals:
  void changed();
  void error(const QString& message);

 private:
  QPointer<StoreClient> store_;
  std::map<QString, td::remote::ClusterSpec> clusters_;
  QStringList names_;
  QStringList problems_;
  bool loaded_ = false;
};

}  // namespace td::gui
