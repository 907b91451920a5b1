#include "gui/app/first_start.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "gui/app/sidebar.h"
#include "gui/data/data_panel.h"
#include "gui/designer/model_designer.h"
#include "gui/runs/experiments_model.h"

namespace td::gui {

FirstStart::FirstStart(ExperimentsModel* experiments, Sidebar* sidebar, ModelDesigner* designer, DataPanel* data,
                       QString demo_dataset, QObject* parent)
    : QObject(parent),
      experiments_(experiments),
      sidebar_(sidebar),
      designer_(designer),
      data_(data),
      demo_dataset_(std::move(demo_dataset)) {}

nlohmann::json FirstStart::demoConfig() {
  QFile f(QStringLiteral(":/configs/demo.json"));
  if (!f.open(QIODevice::ReadOnly)) return nlohmann::json::object();
  auto doc = nlohmann::json::parse(f.readAll().toStdString(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("data") && doc["data"].is_object()) doc["data"].erase("path");
  return doc;
}

void FirstStart::begin() {
  ready_ = false;
  delete waiter_;
  waiter_ = new QObject(this);
  QObject* waiter = waiter_;
  connect(experiments_, &ExperimentsModel::loaded, waiter, [this, waiter, demo_pending = false]() mutable {
    if (!demo_pending) {
      demo_pending = experiments_->experimentNames().isEmpty();
      setUp();
    }
    if (demo_pending && !experiments_->experimentNames().contains(QString::fromLatin1(kDemoExperiment))) return;
    waiter->deleteLater();
    ready_ = true;
    emit ready();
  });
}

void FirstStart::setUp() {
  const bool first = experiments_->experimentNames().isEmpty();
  if (first) {
    experiments_->createExperiment(QString::fromLatin1(kDemoExperiment));
    sidebar_->selectExperiment(QString::fromLatin1(kDemoExperiment));
  }
  auto doc = first ? demoConfig() : designer_->config();
  const std::string current = doc.contains("data") ? doc["data"].value("path", std::string()) : std::string();
  const bool data_missing = current.empty() || !QFileInfo::exists(QString::fromStdString(current) + "/manifest.json");
  if (!demo_dataset_.isEmpty()) {
    const QString dataset = QFileInfo(demo_dataset_).absoluteFilePath();
    // The demo dataset is registered (an upsert) so the Data page and the designer offer it,
    // and used by a design whose dataset is missing.
    if (first || data_missing) doc["data"]["path"] = dataset.toStdString();
    data_->registerDataset(dataset);
  } else if (data_missing) {
    // No dataset yet: data.path stays empty (the designer says "prepare a dataset first"), not
    // a path that does not exist; a relative one (an older demo config's) is dropped too.
    if (doc.contains("data") && doc["data"].is_object() &&
        (current.empty() || QDir::isRelativePath(QString::fromStdString(current))))
      doc["data"].erase("path");
    // The Data page starts with the default corpus (Debian's fortunes).
    if (data_->sources().isEmpty() && QFileInfo::exists(QStringLiteral("/usr/share/games/fortunes")))
      data_->addSource(QStringLiteral("/usr/share/games/fortunes"));
  }
  designer_->setConfig(doc);
  if (!first) return;
  emit welcome(demo_dataset_.isEmpty() && data_missing
                   ? tr("Welcome: prepare a corpus on the Data page (the fortunes corpus is ready to "
                        "prepare), then press Start run (Ctrl+R).")
                   : tr("Welcome: the demo experiment is ready. Press Start run (Ctrl+R) to train it."));
}

}  // namespace td::gui
