#include "gui/app/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

#include "engine/common/run_id.h"
#include "gui/app/desktop_notify.h"
#include "gui/app/run_card_tab.h"
#include "gui/app/run_view.h"
#include "gui/app/first_start.h"
#include "gui/app/sidebar.h"
#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/cluster_list.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/prompt_dialogs.h"
#include "gui/cluster/secret_store.h"
#include "gui/charts/dashboard.h"
#include "gui/compare/compare_view.h"
#include "gui/core/paths.h"
#include "gui/core/run_text.h"
#include "gui/core/store_client.h"
#include "gui/data/data_panel.h"
#include "gui/designer/model_designer.h"
#include "gui/look/about_dialog.h"
#include "gui/look/i18n.h"
#include "gui/look/icons.h"
#include "gui/look/theme.h"
#include "gui/plan/planner.h"
#include "gui/cluster/slurm_submit_dialog.h"
#include "gui/runs/alert_watch.h"
#include "gui/runs/experiments_model.h"
#include "gui/runs/rank_logs.h"
#include "gui/app/train_on_model.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/run_targets.h"
#include "store/plan_measured.h"
#include "store/store.h"

// The app's resources (demo config) live in this static library: register them explicitly.
static void init_app_resources() { Q_INIT_RESOURCE(app); }

namespace td::gui {

namespace {
constexpr int kMaxRecent = 8;
}  // namespace

MainWindow::MainWindow(const QString& store_path, const QString& demo_dataset, QWidget* parent)
    : QMainWindow(parent) {
  init_app_resources();
  setObjectName(QStringLiteral("main_window"));
  setWindowTitle(QStringLiteral("TrainDeck"));
  store_ = std::make_unique<StoreClient>(store_path);
  experiments_ = new ExperimentsModel(nullptr, this);
  // Where runs go (gui/runs/run_targets.h): this machine, SSH nodes and clusters. SSH nodes:
  // secrets from the system keyring (else asked each time), host keys and secrets asked through
  // dialogs while a worker thread waits; remote runs deployed and followed on workers.
  prompter_ = std::make_unique<WidgetPrompter>(this);
  access_ = new NodeAccess(SecretStore::system(), prompter_.get(), this);
  targets_ = make_targets(access_->connector(), this);
  // Seconds a stopping engine gets (SIGTERM: finish the step, checkpoint) before SIGKILL.
  targets_->setKillTimeoutMs(QSettings().value(QStringLiteral("run/kill_timeout_s"), 30).toInt() * 1000);
  experiments_->setRunActivePredicate([this](const QString& id) { return targets_->isActive(id); });
  // Alerts (gui/runs/alert_watch.h): every target's runs watched, notified on the desktop (tray
  // or freedesktop notifications; the kinds chosen under Run > Alert notifications), badges in
  // the sidebar re-read when a run's alerts change.
  auto* notifier = new AlertNotifier(this);
  notifier->setBackend(desktopNotificationBackend(this));
  auto* alert_watch = new AlertWatch(targets_, notifier, this);
  connect(alert_watch, &AlertWatch::alertsChanged, experiments_, &ExperimentsModel::reload);
  buildPanels();
  buildMenus();
  first_start_ = new FirstStart(experiments_, sidebar_, designer_, data_, demo_dataset, this);
  connect(first_start_, &FirstStart::ready, this, &MainWindow::updateStartEnabled);
  connect(first_start_, &FirstStart::welcome, this, [this](const QString& message) {
    pages_->setCurrentIndex(DesignPage);
    statusBar()->showMessage(message, 15000);
  });

  QSettings settings;
  if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(defaultSize());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  const QByteArray saved = settings.value(QStringLiteral("designer/config")).toByteArray();
  auto doc = nlohmann::json::parse(saved.toStdString(), nullptr, false);
  designer_->setConfig(doc.is_object() ? doc : FirstStart::demoConfig());

  wireStore();
  // Remembered as last/recent only once it opened (a file that is not a store is not).
  store_->exec(this, [](td::store::Store&) {}, [this, store_path] { addRecent(store_path); },
               [this, store_path](const QString& m) {
                 showError(tr("Cannot open the store %1: %2 Use File > Open store or New store.").arg(store_path, m));
               });
}

MainWindow::~MainWindow() {
  // Remote runs keep training on their nodes; no dialog may open from a worker from here on.
  targets_->detachAll();  // every node's task ends here (RemoteTask::kJoinWaitMs at most)
  access_->setPrompter(nullptr);
}

QString MainWindow::storePath() const { return store_ ? store_->path() : QString(); }

void MainWindow::buildPanels() {
  auto* split = new QSplitter(Qt::Horizontal, this);
  sidebar_ = new Sidebar(experiments_, split);
  pages_ = new QTabWidget(split);
  pages_->setObjectName(QStringLiteral("pages"));
  pages_->setDocumentMode(true);

  auto* design_page = new QWidget(pages_);
  auto* design_layout = new QVBoxLayout(design_page);
  designer_ = new ModelDesigner(design_page);
  design_layout->addWidget(designer_, 1);
  auto* start = new QPushButton(icon(QStringLiteral("start")), tr("Start run"), design_page);
  start->setObjectName(QStringLiteral("start_run"));
  start->setToolTip(tr("Train this model where \"Train on\" says (Ctrl+R)"));
  start->setEnabled(false);
  auto* start_row = new QHBoxLayout;
  start_row->addStretch(1);
  // The run's name for people: what differs from the experiment's last run, unless typed.
  auto* name_label = new QLabel(tr("Run name:"), design_page);
  run_name_ = new QLineEdit(design_page);
  run_name_->setObjectName(QStringLiteral("run_name"));
  run_name_->setMaxLength(120);
  run_name_->setMinimumWidth(220);
  run_name_->setToolTip(tr("Shown instead of the run id in the sidebar, legends and tables; rename it later "
                           "from the sidebar. Empty: the fields that differ from the experiment's last run."));
  name_label->setBuddy(run_name_);
  start_row->addWidget(name_label);
  start_row->addWidget(run_name_);
  auto* train_on_label = new QLabel(tr("Train on:"), design_page);
  train_on_ = new QComboBox(design_page);
  train_on_->setObjectName(QStringLiteral("train_on"));
  train_on_->setToolTip(tr("This machine, a node of a cluster saved on the Clusters page, or all its nodes "
                            "(deployed over SSH; one rank per GPU, one per CPU node)"));
  train_on_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  train_on_model_ = new TrainOnModel(targets_, train_on_);
  train_on_->setModel(train_on_model_);
  train_on_label->setBuddy(train_on_);
  start_row->addWidget(train_on_label);
  start_row->addWidget(train_on_);
  start_row->addWidget(start);
  design_layout->addLayout(start_row);
  connect(start, &QPushButton::clicked, this, &MainWindow::startRunAsked);
  connect(designer_, &ModelDesigner::validityChanged, this, &MainWindow::updateStartEnabled);
  connect(designer_, &ModelDesigner::configChanged, this, &MainWindow::suggestRunName);
  // The experiment's newest run changes as runs start and their configs arrive (reloads).
  connect(experiments_, &ExperimentsModel::loaded, this, &MainWindow::suggestRunName);
  QTimer::singleShot(0, this, &MainWindow::suggestRunName);
  updateStartEnabled();
  designer_->planner()->probeDevices();  // the device list: cpu and the GPUs the engine sees

  data_ = new DataPanel(store_.get(), pages_);
  run_view_ = new RunView(store_.get(), targets_, pages_);
  compare_ = new CompareView(store_.get(), pages_);
  compare_dashboard_ = new Dashboard(store_.get(), compare_);
  compare_->setChartsWidget(compare_dashboard_);
  run_view_->setRankLogs(new RankLogs(nullptr, access_->connector(), this));
  clusters_ = new ClusterDesigner(store_.get(), access_, pages_);
  connect(clusters_->clusterList(), &ClusterList::changed, this, &MainWindow::rebuildTargets);
  // Run again (the Run page's Card tab) goes to the cluster a run went to, as it is saved now; a
  // deployed run's page shows its deploy (a local one is shown by runStarted below).
  run_view_->cardTab()->setClusterLookup([this](const QString& name) { return clusters_->clusterList()->cluster(name); });
  connect(run_view_->cardTab(), &RunCardTab::againStarted, this, [this](const QString& id, const QString& from) {
    if (!targets_->files(id).host.isEmpty() || targets_->state(id).phase != RunTargetState::Phase::Running) run_view_->setRun(id);
    statusBar()->showMessage(tr("Run %1 started again as %2.").arg(from, id), 8000);
  });
  rebuildTargets();

  pages_->addTab(design_page, icon(QStringLiteral("designer")), tr("Design"));
  pages_->addTab(data_, icon(QStringLiteral("data")), tr("Data"));
  pages_->addTab(run_view_, icon(QStringLiteral("run")), tr("Run"));
  pages_->addTab(compare_, icon(QStringLiteral("compare")), tr("Compare"));
  pages_->addTab(clusters_, icon(QStringLiteral("remote")), tr("Clusters"));
  split->addWidget(sidebar_);
  split->addWidget(pages_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({420, 1000});
  setCentralWidget(split);

  store_label_ = new QLabel(this);
  statusBar()->addPermanentWidget(store_label_);

  connect(sidebar_, &Sidebar::selectionChanged, this, [this](const QStringList& runs, const QString&) {
    if (runs.size() == 1) {
      if (run_view_->run() != runs.front()) run_view_->setRun(runs.front());
      experiments_->markAlertsSeen(runs.front());  // its page is shown: the badge goes
    } else if (runs.size() >= 2) {
      showRuns(runs);
    }
  });
  connect(sidebar_, &Sidebar::runActivated, this, [this](const QString& id) { showRuns({id}); });
  connect(run_view_, &RunView::stopAsked, this, [this](const QString& id) {
    const QString host = targets_->files(id).host;
    statusBar()->showMessage(
        host.isEmpty() ? tr("Stopping run %1 at the end of its step (checkpoint first)…").arg(id)
                       : tr("Stopping run %1 on its node at the end of its step (checkpoint first)…").arg(id),
        8000);
  });

  // The designer offers the registered datasets; a prepared or chosen one becomes data.path,
  // and its tokenizer's vocab_size the model's.
  connect(data_, &DataPanel::datasetsChanged, designer_, [this](const QStringList& paths) {
    QList<DatasetChoice> choices;
    for (const QString& p : paths) choices.append({p, data_->datasetTokenizer(p), data_->datasetVocabSize(p)});
    designer_->setDatasets(choices);
  });
  connect(data_, &DataPanel::datasetReady, this, [this](const QString& path, int vocab_size) {
    designer_->useDataset(path, vocab_size);
    statusBar()->showMessage(tr("Dataset %1 is ready; the designer uses it now (vocab_size %2).").arg(path).arg(vocab_size), 8000);
  });
  connect(data_, &DataPanel::datasetChosen, this, [this](const QString& path, int vocab_size) {
    designer_->useDataset(path, vocab_size);
    statusBar()->showMessage(tr("The design trains on %1 now (vocab_size %2).").arg(path).arg(vocab_size), 8000);
  });

  connect(experiments_, &ExperimentsModel::error, this, &MainWindow::showError);
  // Every target's runs (gui/runs/run_targets.h). RunView follows the shown run's rows, log,
  // state and end itself (through the same router).
  connect(targets_, &RunTarget::error, this, &MainWindow::showError);
  connect(targets_, &RunTarget::runIngested, this, [this](const QString& id, qint64) {
    if (compare_dashboard_->runs().contains(id)) compare_dashboard_->refresh();
  });
  connect(targets_, &RunTarget::runStarted, this, [this](const QString& id) {
    experiments_->reload();
    sidebar_->selectRun(id);
    const QString host = targets_->files(id).host;
    if (host.isEmpty()) {  // this machine: shown at once; a deployed run's page was shown at its start
      run_view_->setRun(id);
      pages_->setCurrentWidget(run_view_);
    }
    statusBar()->showMessage(host.isEmpty() ? tr("Run %1 started.").arg(id)
                                            : tr("Run %1 is training on %2.").arg(id, host),
                             host.isEmpty() ? 5000 : 8000);
  });
  connect(targets_, &RunTarget::runAttached, this, [this](const QString& id) {
    const QString host = targets_->files(id).host;
    statusBar()->showMessage(host.isEmpty() ? tr("Re-attached to run %1, still training.").arg(id)
                                            : tr("Re-attached to run %1 on %2.").arg(id, host),
                             8000);
    if (run_view_->run() == id) run_view_->updateStatus();
  });
  connect(targets_, &RunTarget::runEnded, this, [this](const QString& id, const QString& status) {
    experiments_->reload();
    statusBar()->showMessage(tr("Run %1 ended: %2.").arg(id, runStatusText(status)), 8000);
    updateMeasuredMfu();
  });
  connect(clusters_, &ClusterDesigner::clustersChanged, this, [this] { rebuildTargets(); });
  // The sidebar's numbers (status, best val loss, tokens/s) follow running runs every 2 s.
  auto* sidebar_refresh = new QTimer(this);
  sidebar_refresh->setInterval(2000);
  connect(sidebar_refresh, &QTimer::timeout, this, [this] {
    const QStringList active = targets_->activeRuns();
    if (active.isEmpty()) return;
    experiments_->reload();
    for (const QString& id : compare_->runs())
      if (active.contains(id)) return compare_->refresh();  // the summary follows compared live runs
  });
  sidebar_refresh->start();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* a = file->addAction(icon(QStringLiteral("new-store")), tr("&New store…"), this, &MainWindow::newStoreDialog);
  a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+N")));
  a = file->addAction(icon(QStringLiteral("open-store")), tr("&Open store…"), this, &MainWindow::openStoreDialog);
  a->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Recent stores"));
  rebuildRecentMenu();
  file->addSeparator();
  a = file->addAction(tr("&Quit"), this, &QWidget::close);
  a->setShortcut(QKeySequence::Quit);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  a = run->addAction(icon(QStringLiteral("start")), tr("&Start run"), this, &MainWindow::startRunAsked);
  a->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  a = run->addAction(icon(QStringLiteral("stop")), tr("S&top run"), this, &MainWindow::stopCurrentRun);
  a->setShortcut(QKeySequence(QStringLiteral("Ctrl+.")));
  a = run->addAction(icon(QStringLiteral("resume")), tr("&Resume run"), this, &MainWindow::resumeCurrentRun);
  a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+R")));
  a = run->addAction(tr("Stop &timeout on nodes…"), this, [this] {
    bool ok = false;
    const int s = QInputDialog::getInt(
        this, tr("Stop timeout"),
        tr("Seconds a remote run gets to finish its step and write its checkpoint after Stop, before it is killed:"),
        targets_->killTimeoutMs() / 1000, 1, 3600, 1, &ok);
    if (!ok) return;
    targets_->setKillTimeoutMs(s * 1000);
    QSettings().setValue(QStringLiteral("run/kill_timeout_s"), s);
  });
  // Which alerts notify on the desktop (QSettings alerts/notify/<kind>; all by default).
  QMenu* alert_menu = run->addMenu(tr("&Alert notifications"));
  for (td::alerts::Kind k : td::alerts::kAllKinds) {
    const QString kind = QString::fromLatin1(td::alerts::kind_name(k).data(), int(td::alerts::kind_name(k).size()));
    QAction* on = alert_menu->addAction(AlertNotifier::kindLabel(kind));
    on->setCheckable(true);
    on->setChecked(AlertNotifier::notifies(kind));
    connect(on, &QAction::toggled, this, [kind](bool checked) { AlertNotifier::setNotifies(kind, checked); });
  }
  a = run->addAction(icon(QStringLiteral("compare")), tr("&Compare selected runs"), this, [this] { showRuns(sidebar_->selectedRuns()); });
  a->setShortcut(QKeySequence(QStringLiteral("Ctrl+M")));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const QStringList names = {tr("&Design"), tr("D&ata"), tr("&Run"), tr("&Compare"), tr("C&lusters")};
  for (int i = 0; i < names.size(); ++i) {
    a = view->addAction(names[i], this, [this, i] { pages_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
  }
  a = view->addAction(icon(QStringLiteral("search")), tr("&Find run or experiment"), this,
                      [this] { sidebar_->searchField()->setFocus(); });
  a->setShortcut(QKeySequence::Find);
  view->addSeparator();

  // Theme and language: applied at once and remembered (QSettings look/theme, look/language).
  QMenu* theme = view->addMenu(tr("&Theme"));
  auto* themes = new QActionGroup(theme);
  for (Theme t : {Theme::System, Theme::Light, Theme::Dark}) {
    a = theme->addAction(themeDisplayName(t), this, [t] {
      applyTheme(*qApp, t);
      QSettings().setValue(QStringLiteral("look/theme"), themeName(t));
    });
    a->setCheckable(true);
    a->setChecked(currentTheme() == t);
    themes->addAction(a);
  }
  QMenu* language = view->addMenu(tr("&Language"));
  auto* languages = new QActionGroup(language);
  for (const QString& lang : availableLanguages()) {
    a = language->addAction(languageDisplayName(lang), this, [this, lang] {
      installTranslation(*qApp, lang);  // LanguageChange: the menus, tabs and Run page re-set their texts
      QSettings().setValue(QStringLiteral("look/language"), lang);
      statusBar()->showMessage(tr("Language: %1.").arg(languageDisplayName(lang)), 10000);
    });
    a->setCheckable(true);
    a->setChecked(currentLanguage() == lang);
    languages->addAction(a);
  }

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  a = help->addAction(icon(QStringLiteral("notes")), tr("&User guide"), this, [this] { openUserGuide(); });
  a->setObjectName(QStringLiteral("help_user_guide"));
  a->setShortcut(QKeySequence::HelpContents);
  help->addAction(icon(QStringLiteral("about")), tr("&About TrainDeck"), this, [this] { showAbout(this); });
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::wireStore() {
  StoreClient* s = store_.get();
  // Start run waits for the store's experiments and, on a first start, the demo design
  // (gui/app/first_start.h).
  first_start_->begin();
  updateStartEnabled();
  connect(s, &StoreClient::error, this, &MainWindow::showError);
  // Every store failure, also those a page handles itself, reaches the status bar (and stderr).
  connect(s, &StoreClient::problem, this, [this](const QString& m) { statusBar()->showMessage(tr("Store: %1").arg(m), 15000); });
  experiments_->setStoreClient(s);
  if (auto* w = findChild<AlertWatch*>()) w->setStoreClient(s);  // before the targets re-attach
  targets_->setStoreClient(s);  // every target re-attaches to the store's live runs
  clusters_->setStoreClient(s);
  data_->setStoreClient(s);
  run_view_->setStoreClient(s);
  compare_->setStoreClient(s);
  compare_dashboard_->setStoreClient(s);
  store_label_->setText(tr("Store: %1").arg(QDir::toNativeSeparators(s->path())));
  // The document first, as editors do ("td.db — TrainDeck"); ending in the application's
  // display name, the window system adds nothing to it.
  setWindowTitle(QStringLiteral("%1 — TrainDeck").arg(QFileInfo(s->path()).fileName()));
  updateMeasuredMfu();
}

void MainWindow::updateMeasuredMfu() {
  // The planner's tokens/s estimate uses the MFU this engine reached here (store/plan_measured.h).
  store_->run<std::optional<double>>(
      this, [](td::store::Store& s) { return td::store::measured_mfu(s); },
      [this](std::optional<double> mfu) {
        if (mfu) designer_->planner()->setMeasuredMfu(*mfu);
      },
      [](const QString&) {});
}

void MainWindow::openStore(const QString& path) {
  if (path.isEmpty()) return;
  // The file is opened (and migrated) on the new client's thread first: a file that is not a
  // store leaves the current one open and says why.
  auto* candidate = new StoreClient(path, this);
  candidate->exec(
      this, [](td::store::Store&) {},
      [this, candidate, path] {
        // The old store's runs keep training; they re-attach when it is reopened.
        experiments_->setStoreClient(nullptr);
        targets_->setStoreClient(nullptr);  // wireStore attaches them to the new one
        candidate->setParent(nullptr);
        // Compare shows the old store's runs: empty until runs of this store are chosen.
        compare_->setRuns({});
        compare_dashboard_->setRuns({});
        std::unique_ptr<StoreClient> old = std::move(store_);
        store_.reset(candidate);
        wireStore();  // every panel moves to the new client before the old one closes
        old.reset();
        addRecent(path);
        emit storeOpened(path);
      },
      [this, candidate, path](const QString& m) {
        candidate->deleteLater();
        showError(tr("Cannot open the store %1: %2").arg(path, m));
      });
}

QString MainWindow::contentionNote(const QStringList& busy) const {
  const nlohmann::json config = designer_->config();
  const std::string device = config.contains("train") && config["train"].is_object()
                                 ? config["train"].value("device", std::string("cpu"))
                                 : std::string("cpu");
  if (busy.isEmpty() || (device != "cpu" && device != "auto")) return {};
  // Runs that each use every core share them: each trains at about 1 / (runs) of its speed
  // alone (the CPU's calibrated sgemm peak is split, docs/planner.md).
  const int runs = static_cast<int>(busy.size()) + 1;
  const PlanCheck c = designer_->planner()->check(config);
  QString text = tr("%n other run(s) already train on this machine's CPU (%1): they and this run slow down, each "
                    "to roughly 1/%2 of its speed alone",
                    nullptr, static_cast<int>(busy.size()))
                     .arg(busy.join(QStringLiteral(", ")))
                     .arg(runs);
  if (c.tokens_per_s > 0 && c.peak_flops)
    text += tr(" (this run: ~%1 tokens/s instead of ~%2 at the calibrated peak of %3 GFLOP/s)")
                .arg(c.tokens_per_s / runs, 0, 'f', 0)
                .arg(c.tokens_per_s, 0, 'f', 0)
                .arg(*c.peak_flops / 1e9, 0, 'f', 1);
  return text + QStringLiteral(".");
}

QString MainWindow::targetExperiment() const {
  // The sidebar's experiment; else the one the last run went to; else the only one there is.
  QString experiment = sidebar_->currentExperiment();
  if (!experiment.isEmpty()) return experiment;
  const QStringList names = experiments_->experimentNames();
  const QString last = QSettings().value(QStringLiteral("run/experiment")).toString();
  if (names.contains(last)) return last;
  if (names.size() == 1) return names.front();
  return QString::fromLatin1(td::store::kDefaultExperiment);
}

void MainWindow::suggestRunName() {
  if (!store_) return;
  if (!sidebar_ || !experiments_) return;
  const std::string exp = targetExperiment().toStdString();
  const std::string config = designer_->config().dump();
  store_->run<std::string>(
      this, [exp, config](td::store::Store& s) { return exp.empty() ? std::string() : s.suggest_run_name(exp, config); },
      [this](std::string name) {
        suggested_name_ = QString::fromStdString(name);
        run_name_->setPlaceholderText(suggested_name_.isEmpty() ? tr("optional") : suggested_name_);
      },
      [](const QString&) {});
}

void MainWindow::updateStartEnabled() {
  if (auto* start = findChild<QPushButton*>(QStringLiteral("start_run")))
    start->setEnabled(isReady() && designer_->isValid());
}

void MainWindow::startRunAsked() {
  // A Slurm run shows its batch script first; Cancel submits nothing.
  const PlacementChoice* choice = train_on_model_->choice(train_on_->currentIndex());
  if (choice && choice->placement.cluster && choice->placement.cluster->is_slurm() &&
      !SlurmSubmitDialog::confirm(*choice->placement.cluster, this))
    return;
  QString error;
  if (startRun(&error).isEmpty()) showError(error);
}

QString MainWindow::startRun(QString* error) {
  if (!isReady()) {
    if (error) *error = tr("The store is still opening: start the run in a moment.");
    return {};
  }
  if (!designer_->isValid()) {
    if (error) *error = tr("The design has invalid fields (marked in red): fix them first.");
    return {};
  }
  const QString experiment = targetExperiment();
  contention_note_.clear();
  // The typed name, else the suggestion (what differs from the experiment's last run).
  const QString typed = run_name_->text().trimmed();
  const QString name = typed.isEmpty() ? suggested_name_ : typed;
  {
    std::string problem;
    td::normalise_run_name(name.toStdString(), &problem);
    if (!problem.empty()) {
      if (error) *error = tr("The run name is refused: %1").arg(QString::fromStdString(problem));
      return {};
    }
  }
  // The chosen "Train on" entry; rebuilt whenever the saved clusters change, so its cluster is
  // the one saved now.
  const PlacementChoice* choice = train_on_model_->choice(train_on_->currentIndex());
  if (!choice) {
    if (error) *error = tr("Choose where to train (\"Train on\").");
    return {};
  }
  const RunPlacement placement = choice->placement;
  const QStringList busy = localRuns();  // before this one starts
  const QString id = targets_->start(placement, experiment, designer_->config(), name, error);
  if (!id.isEmpty() && placement.cluster) {
    // The Run page shows the deploy's progress until the engine trains on the node.
    run_view_->setRun(id);
    pages_->setCurrentWidget(run_view_);
    statusBar()->showMessage(tr("Deploying run %1 to %2…").arg(id, train_on_->currentText()), 8000);
  } else if (!id.isEmpty()) {
    contention_note_ = contentionNote(busy);
    if (!contention_note_.isEmpty()) statusBar()->showMessage(contention_note_, 20000);
  }
  if (!id.isEmpty()) {
    run_name_->clear();
    QTimer::singleShot(0, this, &MainWindow::suggestRunName);  // against this run, next time
    QSettings().setValue(QStringLiteral("run/experiment"), experiment);
    QSettings().setValue(QStringLiteral("run/target"), train_on_->currentText());
  }
  return id;
}

void MainWindow::rebuildTargets() {
  const QString current = train_on_->count() ? train_on_->currentText()
                                             : QSettings().value(QStringLiteral("run/target")).toString();
  QSignalBlocker block(train_on_);
  QList<td::remote::ClusterSpec> clusters;
  ClusterList* list = clusters_->clusterList();
  for (const QString& name : list->names())
    if (const auto c = list->cluster(name)) clusters.push_back(*c);
  train_on_model_->setClusters(clusters);
  const int at = train_on_model_->rowOf(current);
  train_on_->setCurrentIndex(at >= 0 ? at : 0);
}

QStringList MainWindow::localRuns() const {
  const RunTarget* here = targets_->target(QStringLiteral("local"));
  return here ? here->activeRuns() : QStringList{};
}

void MainWindow::stopCurrentRun() { run_view_->requestStop(); }

void MainWindow::resumeCurrentRun() { run_view_->requestResume(); }

void MainWindow::showRuns(const QStringList& run_ids) {
  if (run_ids.size() == 1) {
    run_view_->setRun(run_ids.front());
    pages_->setCurrentWidget(run_view_);
  } else if (run_ids.size() >= 2) {
    compare_->setRuns(run_ids);
    compare_dashboard_->setRuns(run_ids);
    pages_->setCurrentWidget(compare_);
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // An unsaved cluster first, as editors ask: Save (closes once saved), Discard, Cancel.
  if (clusters_->isDirty()) {
    event->ignore();
    pages_->setCurrentWidget(clusters_);
    clusters_->confirmDiscard(tr("Save them before you quit?"), [this] { QTimer::singleShot(0, this, &QWidget::close); });
    return;
  }
  // Runs on this machine (runs on nodes and clusters go on whatever is chosen here).
  const QStringList active = localRuns();
  CloseAction action = close_action_;
  if (!active.isEmpty() && action == CloseAction::Ask) {
    QMessageBox box(QMessageBox::Question, tr("Runs are training"),
                    tr("%n run(s) are training. Leave them running (TrainDeck re-attaches at its next start) or "
                       "stop them (each writes a checkpoint first)?",
                       "", active.size()),
                    QMessageBox::Cancel, this);
    QPushButton* leave = box.addButton(tr("Leave running"), QMessageBox::AcceptRole);
    QPushButton* stop = box.addButton(tr("Stop runs"), QMessageBox::DestructiveRole);
    box.setDefaultButton(leave);
    box.exec();
    if (box.clickedButton() == leave)
      action = CloseAction::LeaveRunning;
    else if (box.clickedButton() == stop)
      action = CloseAction::StopRuns;
    else
      return event->ignore();
  }
  if (action == CloseAction::StopRuns)
    if (RunTarget* here = targets_->target(QStringLiteral("local"))) here->stopAll();
  targets_->detachAll();
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("designer/config"), QByteArray::fromStdString(designer_->config().dump()));
  settings.setValue(QStringLiteral("store/last"), storePath());
  event->accept();
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QMainWindow::changeEvent(event);
}

void MainWindow::retranslate() {
  // Menus and tabs are rebuilt with the new language; panels retranslate themselves.
  menuBar()->clear();
  buildMenus();
  pages_->setTabText(DesignPage, tr("Design"));
  pages_->setTabText(DataPage, tr("Data"));
  pages_->setTabText(RunPage, tr("Run"));
  pages_->setTabText(ComparePage, tr("Compare"));
  pages_->setTabText(ClustersPage, tr("Clusters"));
  if (auto* start = findChild<QPushButton*>(QStringLiteral("start_run"))) {
    start->setText(tr("Start run"));
    start->setToolTip(tr("Train this model where \"Train on\" says (Ctrl+R)"));
  }
  store_label_->setText(tr("Store: %1").arg(QDir::toNativeSeparators(storePath())));
  // Models' texts (the sidebar's statuses, Compare's table) are asked for again.
  experiments_->reload();
  if (!compare_->runs().isEmpty()) compare_->refresh();
}

QString MainWindow::openUserGuide() {
  const QString guide = userGuidePath();
  if (guide.isEmpty()) {
    showError(tr("The user guide was not found (looked for %1). It is docs/guide.md in TrainDeck's sources; "
                 "the package installs it in /usr/share/doc/traindeck.")
                  .arg(userGuideCandidates().join(QStringLiteral(", "))));
    return {};
  }
  if (!QDesktopServices::openUrl(QUrl::fromLocalFile(guide))) {
    showError(tr("No program to open %1 with: open it in a text editor or a Markdown viewer.").arg(guide));
    return {};
  }
  statusBar()->showMessage(tr("Opened the user guide, %1.").arg(guide), 5000);
  return guide;
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(QStringLiteral("store/recent")).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(QStringLiteral("store/recent"), recent);
  settings.setValue(QStringLiteral("store/last"), abs);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList recent = QSettings().value(QStringLiteral("store/recent")).toStringList();
  for (const QString& path : recent)
    recent_menu_->addAction(QDir::toNativeSeparators(path), this, [this, path] { openStore(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::newStoreDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("New store"), QFileInfo(storePath()).absolutePath(),
                                                    tr("TrainDeck stores (*.db *.sqlite);;All files (*)"));
  if (path.isEmpty()) return;
  if (QFileInfo::exists(path)) {
    showError(tr("%1 exists already: use File > Open store to open it; nothing was overwritten.").arg(path));
    return;
  }
  openStore(path);
}

void MainWindow::openStoreDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open store"), QFileInfo(storePath()).absolutePath(),
                                                    tr("TrainDeck stores (*.db *.sqlite);;All files (*)"));
  if (!path.isEmpty()) openStore(path);
}

void MainWindow::showError(const QString& message) {
  if (message.isEmpty()) return;
  // The same failure reported by several jobs at once (e.g. a store that cannot be opened) is
  // shown once.
  if (message == last_error_ && last_error_time_.isValid() && last_error_time_.elapsed() < 3000) return;
  last_error_ = message;
  last_error_time_.start();
  statusBar()->showMessage(message, 15000);
  qWarning("traindeck: %s", qPrintable(message));
  emit errorShown(message);
  if (!isVisible()) return;
  // Not modal: an error never stops the window (or a running test) from going on.
  auto* box = new QMessageBox(QMessageBox::Warning, tr("TrainDeck"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  box->show();
}

}  // namespace td::gui
