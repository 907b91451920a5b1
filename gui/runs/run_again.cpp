#include "gui/runs/run_again.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <memory>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_targets.h"
#include "store/store.h"

namespace td::gui {

namespace {

constexpr qint64 kMaxManifestBytes = 64ll * 1024 * 1024;  // as the engine reads it (engine/data/manifest.h)

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The first 12 hex digits of a hash, for people.
QString short_hash(const QString& hex) { return hex.left(12); }

}  // namespace

RunAgain::RunAgain(StoreClient* store, RunTargets* targets, QObject* parent)
    : QObject(parent), store_(store), targets_(targets) {}

void RunAgain::setStoreClient(StoreClient* store) { store_ = store; }
void RunAgain::setRunTargets(RunTargets* targets) { targets_ = targets; }

void RunAgain::load(const QString& run_id) {
  run_id_ = run_id;
  loaded_ = false;
  const quint64 gen = ++generation_;
  if (!store_ || run_id.isEmpty()) return;
  struct Result {
    td::store::RunCard card;
    DatasetCheck check;
  };
  const std::string id = run_id.toStdString();
  store_->run<std::shared_ptr<Result>>(
      this,
      [id](td::store::Store& s) {
        auto r = std::make_shared<Result>();
        r->card = s.run_card(id);
        // A remote run's dataset here is a registered one; a local run needs no list.
        const std::vector<td::store::Dataset> registered =
            r->card.target == "local" ? std::vector<td::store::Dataset>{} : s.list_datasets();
        r->check = checkDataset(r->card, registered);
        return r;
      },
      [this, gen, run_id](std::shared_ptr<Result> r) {
        if (gen != generation_) return;
        card_ = std::move(r->card);
        check_ = std::move(r->check);
        loaded_ = true;
        emit loaded(run_id);
      },
      [this, gen, run_id](const QString& m) {
        if (gen != generation_) return;
        emit failed(run_id, m);
      });
}

QString RunAgain::manifestSha256(const QString& dataset_dir, QString* why) {
  auto say = [&](const QString& m) {
    if (why) *why = m;
    return QString();
  };
  const QString path = QDir(dataset_dir).filePath(QStringLiteral("manifest.json"));
  const QFileInfo fi(path);
  if (fi.isSymLink())
    return say(tr("'%1' is a symbolic link: a dataset's manifest must be a regular file.").arg(path));
  if (!fi.exists()) return say(tr("'%1' holds no manifest.json.").arg(dataset_dir));
  if (!fi.isFile() || fi.size() > kMaxManifestBytes)
    return say(tr("'%1' is not a dataset manifest (not a regular file of at most 64 MiB).").arg(path));
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return say(tr("Cannot read '%1': %2").arg(path, f.errorString()));
  QCryptographicHash h(QCryptographicHash::Sha256);
  if (!h.addData(&f)) return say(tr("Cannot read '%1': %2").arg(path, f.errorString()));
  return QString::fromLatin1(h.result().toHex());
}

DatasetCheck RunAgain::checkDataset(const td::store::RunCard& card, const std::vector<td::store::Dataset>& registered) {
  DatasetCheck c;
  const QString recorded = qs(card.dataset_sha256);
  const QString path = qs(card.dataset_path);
  if (path.isEmpty()) {
    c.state = DatasetCheck::State::Missing;
    c.message = tr("The run's card names no dataset (its config has no data.path): start a run from the Design page.");
    return c;
  }
  QString why;
  if (card.target == "local") {
    c.local_path = path;
    c.sha256_now = manifestSha256(path, &why);
  } else {
    // On the node: <work>/datasets/<name>-<first 12 hex of the manifest's SHA-256>.
    QString name = QFileInfo(path).fileName();
    static const QRegularExpression suffix(QStringLiteral("^(.+)-([0-9a-f]{12})$"));
    if (const auto m = suffix.match(name); m.hasMatch() && (recorded.isEmpty() || recorded.startsWith(m.captured(2))))
      name = m.captured(1);
    QString first, first_sha;
    for (const auto& d : registered) {
      if (qs(d.name) != name) continue;
      const QString sha = manifestSha256(qs(d.path));
      if (sha.isEmpty()) continue;
      if (first.isEmpty()) {
        first = qs(d.path);
        first_sha = sha;
      }
      if (!recorded.isEmpty() && sha == recorded) {
        first = qs(d.path);
        first_sha = sha;
        break;
      }
    }
    if (first.isEmpty()) {
      c.state = DatasetCheck::State::Missing;
      c.message = tr("The run trained on the dataset %1 on its node; no dataset named %2 is registered on this machine: "
                     "prepare or add it on the Data page first.")
                      .arg(path, name);
      return c;
    }
    c.local_path = first;
    c.sha256_now = first_sha;
  }
  if (c.sha256_now.isEmpty()) {
    c.state = DatasetCheck::State::Missing;
    c.message = tr("The dataset %1 is gone (%2): prepare it again on the Data page, or start a run on another "
                   "dataset from the Design page.")
                    .arg(c.local_path, why);
    c.local_path.clear();
    return c;
  }
  if (recorded.isEmpty()) {
    c.state = DatasetCheck::State::Unknown;
    c.message = tr("This run was recorded without its dataset's hash (an older TrainDeck): whether %1 is still the "
                   "data it read cannot be checked.")
                    .arg(c.local_path);
  } else if (c.sha256_now != recorded) {
    c.state = DatasetCheck::State::Changed;
    c.message = tr("The dataset %1 has changed since this run: its manifest.json's SHA-256 is %2… now, the run read "
                   "%3…. A new run trains on the data as it is now, so its losses will differ.")
                    .arg(c.local_path, short_hash(c.sha256_now), short_hash(recorded));
  } else {
    c.state = DatasetCheck::State::Same;
  }
  return c;
}

bool RunAgain::placementOf(const td::store::RunCard& card, const ClusterLookup& lookup, RunPlacement* placement,
                           QString* error) {
  auto refuse = [&](const QString& m) {
    if (error) *error = m;
    return false;
  };
  *placement = RunPlacement{};
  if (card.target == "local") return true;
  if (!card.remote) return refuse(tr("The store does not say where run %1 ran.").arg(qs(card.run_id)));
  const QString cluster_name = qs(card.remote->cluster);
  const auto cluster = lookup ? lookup(cluster_name) : std::nullopt;
  const QString again_elsewhere = tr("save it again on the Clusters page, or start the run from the Design page");
  if (!cluster) return refuse(tr("The cluster %1 that run %2 ran on is no longer saved: %3.")
                                  .arg(cluster_name, qs(card.run_id), again_elsewhere));
  const bool slurm = card.target == "slurm";
  if (cluster->is_slurm() != slurm)
    return refuse(tr("The cluster %1 is no longer a %2 cluster: %3.")
                      .arg(cluster_name, slurm ? QStringLiteral("Slurm") : QStringLiteral("SSH"), again_elsewhere));
  placement->cluster = *cluster;
  placement->node = -1;
  if (slurm) return true;  // Slurm places the ranks
  if (!card.remote->layout_json.empty()) {  // every node of the cluster: one multi-node run
    if (cluster->nodes.size() < 2)
      return refuse(tr("The cluster %1 has fewer than two nodes now: %2.").arg(cluster_name, again_elsewhere));
    return true;
  }
  td::remote::NodeSpec node;
  try {
    node = td::remote::node_from_json(nlohmann::json::parse(card.remote->node_json));
  } catch (const std::exception& e) {
    return refuse(tr("The node run %1 ran on is not readable in the store (%2).").arg(qs(card.run_id), qs(e.what())));
  }
  int by_host = -1;
  for (size_t i = 0; i < cluster->nodes.size(); ++i) {
    const auto& n = cluster->nodes[i];
    if (n.host != node.host || n.port != node.port) continue;
    if (n.display_name() == node.display_name()) {
      placement->node = int(i);
      return true;
    }
    if (by_host < 0) by_host = int(i);
  }
  if (by_host >= 0) {
    placement->node = by_host;
    return true;
  }
  return refuse(tr("The node %1 is no longer in the cluster %2: %3.")
                    .arg(qs(node.display_name()), cluster_name, again_elsewhere));
}

QString RunAgain::againName(const td::store::RunCard& card) {
  const std::string base = card.name.empty() ? card.run_id : card.name;
  const std::string tail = " again";
  std::string n = base;
  if (n.size() + tail.size() > 120) {
    size_t cut = 120 - tail.size();
    // Never cut a UTF-8 sequence in two: back to the start of the character at the cut.
    while (cut > 0 && (static_cast<unsigned char>(n[cut]) & 0xC0) == 0x80) --cut;
    n.resize(cut);
  }
  return qs(n + tail);
}

QString RunAgain::start(QString* error) {
  auto refuse = [&](const QString& m) {
    if (error) *error = m;
    return QString();
  };
  if (!loaded_) return refuse(tr("The run's card is not loaded yet: try again in a moment."));
  if (!targets_) return refuse(tr("No run targets: nothing can start a run."));
  if (!check_.canStart()) return refuse(check_.message);
  nlohmann::json config = nlohmann::json::parse(card_.config_json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object())
    return refuse(tr("Run %1 has no readable config in the store: it cannot be run again.").arg(run_id_));
  RunPlacement placement;
  if (!placementOf(card_, lookup_, &placement, error)) return {};
  // The data as it is here (a remote run's config names the node's folder; deploy sends it again).
  config["data"]["path"] = check_.local_path.toStdString();
  // The target may report the new run at once (runStarted), and a page showing it may load()
  // the new run's card meanwhile: what is needed after the call is taken first.
  const QString from = run_id_;
  const QString id = targets_->start(placement, qs(card_.experiment), config, againName(card_), error);
  if (!id.isEmpty()) emit started(id, from);
  return id;
}

}  // namespace td::gui
