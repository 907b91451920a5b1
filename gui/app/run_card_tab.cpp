#include "gui/app/run_card_tab.h"

#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "gui/look/icons.h"
#include "gui/runs/run_targets.h"

namespace td::gui {

namespace {

const char* const kFields[] = {"seed", "dataset", "manifest", "tokens", "engine", "host", "device", "world_size", "place"};
constexpr int kFieldCount = int(std::size(kFields));

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

RunCardTab::RunCardTab(StoreClient* store, QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("run_card"));
  again_ = new RunAgain(store, nullptr, this);
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (int i = 0; i < kFieldCount; ++i) {
    names_[i] = new QLabel(this);
    values_[i] = new QLabel(this);
    values_[i]->setObjectName(QStringLiteral("card_%1").arg(QLatin1String(kFields[i])));
    values_[i]->setTextFormat(Qt::PlainText);  // from an events file: never rich text
    values_[i]->setTextInteractionFlags(Qt::TextSelectableByMouse);
    values_[i]->setWordWrap(true);
    form->addRow(names_[i], values_[i]);
  }
  layout->addLayout(form);
  warning_ = new QLabel(this);
  warning_->setObjectName(QStringLiteral("card_warning"));
  warning_->setTextFormat(Qt::PlainText);
  warning_->setWordWrap(true);
  warning_->setStyleSheet(QStringLiteral("color: #b45309;"));
  warning_->setVisible(false);
  layout->addWidget(warning_);
  config_ = new QPlainTextEdit(this);
  config_->setObjectName(QStringLiteral("card_config"));
  config_->setReadOnly(true);
  config_->setLineWrapMode(QPlainTextEdit::NoWrap);
  layout->addWidget(config_, 1);
  auto* row = new QHBoxLayout;
  row->addStretch(1);
  run_again_ = new QPushButton(icon(QStringLiteral("start")), QString(), this);
  run_again_->setObjectName(QStringLiteral("card_run_again"));
  run_again_->setEnabled(false);
  row->addWidget(run_again_);
  layout->addLayout(row);
  retranslate();
  connect(run_again_, &QPushButton::clicked, this, [this] { runAgainNow(); });
  connect(again_, &RunAgain::loaded, this, [this](const QString& id) {
    if (id == run_) fill();
  });
  connect(again_, &RunAgain::failed, this, [this](const QString& id, const QString& message) {
    if (id == run_) clear(message);
  });
  connect(again_, &RunAgain::started, this, &RunCardTab::againStarted);
  clear(QString());
}

void RunCardTab::setStoreClient(StoreClient* store) {
  again_->setStoreClient(store);
  setRun(QString());
}

void RunCardTab::setRunTargets(RunTargets* targets) {
  targets_ = targets;
  again_->setRunTargets(targets);
  if (again_->isLoaded()) fill();
}

void RunCardTab::setClusterLookup(RunAgain::ClusterLookup lookup) { again_->setClusterLookup(std::move(lookup)); }

void RunCardTab::setRun(const QString& run_id) {
  run_ = run_id;
  clear(QString());
  again_->load(run_id);
}

QString RunCardTab::fieldText(const QString& field) const {
  for (int i = 0; i < kFieldCount; ++i)
    if (field == QLatin1String(kFields[i])) return values_[i]->text();
  return {};
}

void RunCardTab::clear(const QString& note) {
  for (QLabel* v : values_) v->clear();
  config_->clear();
  warning_->setText(note);
  warning_->setVisible(!note.isEmpty());
  run_again_->setEnabled(false);
  run_again_->setText(tr("Run again"));
}

void RunCardTab::fill() {
  const td::store::RunCard& c = again_->card();
  const DatasetCheck& check = again_->check();
  const QString unknown = tr("not recorded");
  auto set = [&](const char* field, const QString& text) {
    for (int i = 0; i < kFieldCount; ++i)
      if (qstrcmp(kFields[i], field) == 0) values_[i]->setText(text.isEmpty() ? unknown : text);
  };
  set("seed", c.seed ? QString::number(*c.seed) : QString());
  set("dataset", check.local_path.isEmpty() || check.local_path == qs(c.dataset_path)
                     ? qs(c.dataset_path)
                     : tr("%1 (here: %2)").arg(qs(c.dataset_path), check.local_path));
  QString state;
  switch (check.state) {
    case DatasetCheck::State::Same: state = tr("unchanged since the run"); break;
    case DatasetCheck::State::Changed: state = tr("changed since the run"); break;
    case DatasetCheck::State::Missing: state = tr("dataset not found"); break;
    case DatasetCheck::State::Unknown: state = QString(); break;
  }
  set("manifest", c.dataset_sha256.empty() ? QString()
                  : state.isEmpty()        ? qs(c.dataset_sha256)
                                           : tr("%1 (%2)").arg(qs(c.dataset_sha256), state));
  set("tokens", c.dataset_train_tokens && c.dataset_val_tokens
                    ? tr("%L1 train · %L2 validation").arg(*c.dataset_train_tokens).arg(*c.dataset_val_tokens)
                    : QString());
  set("engine", c.engine_version.empty() ? QString()
                : c.engine_build.empty() ? qs(c.engine_version)
                                         : tr("%1 (%2)").arg(qs(c.engine_version), qs(c.engine_build)));
  QStringList hosts;
  for (const auto& h : c.hosts) hosts << qs(h);
  set("host", hosts.size() > 1 ? hosts.join(QStringLiteral(", ")) : qs(c.host));
  set("device", c.device_name.empty() ? qs(c.device) : tr("%1 · %2").arg(qs(c.device), qs(c.device_name)));
  set("world_size", c.world_size ? QString::number(*c.world_size) : QString());
  QString place;
  if (c.target == "local") {
    place = tr("this machine");
  } else if (c.remote) {
    const QString cluster = qs(c.remote->cluster);
    if (c.target == "slurm") {
      place = tr("Slurm cluster %1").arg(cluster);
    } else if (!c.remote->layout_json.empty()) {
      place = tr("every node of %1").arg(cluster);
    } else {
      const auto node = nlohmann::json::parse(c.remote->node_json, nullptr, false);
      QString name;
      if (node.is_object()) {
        if (node.contains("name") && node["name"].is_string()) name = qs(node["name"].get<std::string>());
        if (name.isEmpty() && node.contains("host") && node["host"].is_string()) name = qs(node["host"].get<std::string>());
      }
      place = tr("%1 / %2").arg(cluster, name);
    }
  }
  set("place", place);
  const auto cfg = nlohmann::json::parse(c.config_json, nullptr, false);
  config_->setPlainText(cfg.is_object() ? qs(cfg.dump(2)) : QString());
  QString note = check.message;
  if (!cfg.is_object()) note = tr("The run's start has not been recorded yet: its card fills in once the engine starts.");
  warning_->setText(note);
  warning_->setVisible(!note.isEmpty());
  run_again_->setText(check.state == DatasetCheck::State::Changed ? tr("Run again anyway") : tr("Run again"));
  run_again_->setEnabled(targets_ && cfg.is_object() && check.canStart());
}

QString RunCardTab::runAgainNow() {
  QString error;
  const QString id = again_->start(&error);
  if (id.isEmpty()) {
    warning_->setText(error);
    warning_->setVisible(true);
  }
  return id;
}

void RunCardTab::retranslate() {
  const QString names[kFieldCount] = {tr("Seed:"),   tr("Dataset:"), tr("Manifest SHA-256:"),
                                      tr("Tokens:"), tr("Engine:"),  tr("Host:"),
                                      tr("Device:"), tr("World size:"), tr("Ran on:")};
  for (int i = 0; i < kFieldCount; ++i) names_[i]->setText(names[i]);
  run_again_->setToolTip(tr("Start a new run with exactly this card: the same config and seed, in the same experiment, "
                            "where this run went"));
  if (again_->isLoaded() && again_->runId() == run_) fill();
}

void RunCardTab::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

}  // namespace td::gui
