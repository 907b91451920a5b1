// ClusterList (cluster_list.h).
#include "gui/cluster/cluster_list.h"

#include <vector>

#include "gui/core/store_client.h"
#include "store/store.h"

namespace td::gui {

ClusterList::ClusterList(StoreClient* store, QObject* parent) : QObject(parent) { setStoreClient(store); }

void ClusterList::setStoreClient(StoreClient* store) {
  store_ = store;
  loaded_ = false;
  reload();
}

QString ClusterList::localName() { return tr("This machine"); }

void ClusterList::reload() {
  if (!store_) {
    clusters_.clear();
    names_.clear();
    problems_.clear();
    emit changed();
    return;
  }
  store_->run<std::vector<td::store::ClusterRow>>(
      this, [](td::store::Store& s) { return s.list_clusters(); },
      [this](std::vector<td::store::ClusterRow> rows) {
        clusters_.clear();
        names_.clear();
        problems_.clear();
        for (const td::store::ClusterRow& row : rows) {
          const QString name = QString::fromStdString(row.name);
          try {
            td::remote::ClusterSpec spec = td::remote::cluster_from_json(nlohmann::json::parse(row.spec_json));
            spec.name = row.name;  // the row's name is the key
            clusters_[name] = std::move(spec);
            names_ << name;
          } catch (const std::exception& e) {
            problems_ << tr("%1: %2").arg(name, QString::fromUtf8(e.what()));
          }
        }
        loaded_ = true;
        emit changed();
      },
      [this](const QString& message) { emit error(message); });
}

QStringList ClusterList::names() const { return names_; }

std::optional<td::remote::ClusterSpec> ClusterList::cluster(const QString& name) const {
  if (name == localName()) {
    td::remote::ClusterSpec local;
    local.name = name.toStdString();
    return local;
  }
  const auto it = clusters_.find(name);
  if (it == clusters_.end()) return std::nullopt;
  return it->second;
}

}  // namespace td::gui
