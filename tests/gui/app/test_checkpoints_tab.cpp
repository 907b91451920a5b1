// The run page's Checkpoints tab (issue 14, "A Checkpoints tab per run"), on a real tiny run
// trained by the engine (20 steps, a checkpoint every 10): the tab lists steps 10 and 20 with the
// bytes their folders hold on disk; Generate (greedy and sampled) streams exactly the text the
// engine's own `sample` prints for the same checkpoint and options (run here as the independent
// reference), and Stop ends a long one while it streams; Keep survives a resumed run that prunes
// to one checkpoint, whose pruned steps show as such; Delete removes exactly that folder (and refuses a symlinked or misnamed one); Export
// writes a Hugging Face folder with the model's shape, its progress bar at 100 %. A remote run's
// rows come from the node's listing (RunTarget::checkpointsListed, emitted here as the
// controller does); Generate uses a checkpoint already in the local cache, and a download that
// fails (no node in this test) is said in the dialog.
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "app_fixture.h"
#include "gui/app/checkpoint_dialogs.h"
#include "gui/app/checkpoints_tab.h"
#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/checkpoint_jobs.h"
#include "gui/runs/remote_run_controller.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/run_targets.h"
#include "engine/common/error.h"

using tdguitest::kSlowMs;
using Row = td::gui::CheckpointsTab::Row;

namespace {
// The bytes of the plain files in a folder, summed (QFileInfo, independent of the tab's code).
qint64 folder_bytes(const QString& dir) {
  qint64 sum = 0;
  for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files | QDir::Hidden)) sum += f.size();
  return sum;
}

QString step_dir(const QString& run, int step) { return run + QStringLiteral("/checkpoints/step_%1").arg(step, 8, 10, QChar('0')); }

// Runs the engine to its end; "" when it exited 0, else its stderr.
QString run_engine(const QStringList& args, QByteArray* out = nullptr) {
  QProcess p;
  p.start(TD_ENGINE_EXE, args);
  if (!p.waitForFinished(kSlowMs)) return "timed out: traindeck-engine " + args.join(' ');
  if (out) *out = p.readAllStandardOutput();
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
    return QString::fromUtf8(p.readAllStandardError()) + " (exit " + QString::number(p.exitCode()) + ")";
  return {};
}

int row_of(const td::gui::CheckpointsTab* tab, int step) {
  const auto rows = tab->rows();
  for (int i = 0; i < rows.size(); ++i)
    if (rows[i].step == step) return i;
  return -1;
}
}  // namespace

class TestCheckpointsTab : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, cfg_, db_, run_;
  std::unique_ptr<td::gui::StoreClient> client_;
  std::unique_ptr<td::gui::RunTargets> targets_;
  std::unique_ptr<td::gui::RunView> view_;
  td::gui::CheckpointsTab* tab() const { return view_->checkpointsTab(); }

  // Reloads the tab as the run page does on an ingest and waits for its rows.
  void reload_and_wait() {
    QSignalSpy reloaded(tab(), &td::gui::CheckpointsTab::reloaded);
    view_->onIngested(QStringLiteral("ck"));
    QVERIFY2(reloaded.wait(kSlowMs), "waited for the Checkpoints tab to reload after an ingest");
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    tdapptest::isolate(dir_);
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
    nlohmann::json cfg = tdguitest::tiny_config(data_, 20, 10);
    cfg["train"]["lr"] = 3e-3;  // a model that has learnt a little writes more than spaces
    cfg_ = dir_.filePath("run.json");
    tdguitest::writeFile(cfg_, QByteArray::fromStdString(cfg.dump()));
    db_ = dir_.filePath("td.db");
    run_ = dir_.filePath("runs/ck");
    const QString err = run_engine({"train", "--config", cfg_, "--out", run_, "--run-id", "ck", "--db", db_, "--experiment", "t",
                                    "--quiet", "--no-events-stdout"});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    client_ = std::make_unique<td::gui::StoreClient>(db_);
    targets_ = std::make_unique<td::gui::RunTargets>();
    targets_->add(new td::gui::RunController(nullptr));
    targets_->setStoreClient(client_.get());  // as the window wires it
    view_ = std::make_unique<td::gui::RunView>(client_.get(), targets_.get());
    view_->resize(1200, 800);
    view_->show();
  }

  void listsStepsWithTheirSizeOnDisk() {
    QVERIFY(view_ && tab());
    QSignalSpy reloaded(tab(), &td::gui::CheckpointsTab::reloaded);
    view_->setRun(QStringLiteral("ck"));
    QVERIFY2(reloaded.wait(kSlowMs), "waited for the Checkpoints tab to load run ck");
    const auto rows = tab()->rows();
    QCOMPARE(rows.size(), 2);
    QCOMPARE(tab()->checkpointRoot(), run_ + "/checkpoints");
    for (int i = 0; i < 2; ++i) {
      const int step = 10 * (i + 1);
      QCOMPARE(rows[i].step, step);
      QCOMPARE(rows[i].path, step_dir(run_, step));
      const qint64 disk = folder_bytes(step_dir(run_, step));
      QVERIFY(disk > 10000);
      QCOMPARE(rows[i].bytes, disk);
      QVERIFY(rows[i].on_disk && !rows[i].kept && !rows[i].remote);
      QVERIFY(rows[i].t > 1.6e9);
      QTableWidget* t = tab()->table();
      QCOMPARE(t->item(i, 0)->text(), QString::number(step));
      QCOMPARE(t->item(i, 1)->text(), QString::number(disk / 1e6, 'f', 2) + " MB");
      QCOMPARE(t->item(i, 3)->text(), QStringLiteral("no"));
      QCOMPARE(t->item(i, 4)->text(), QStringLiteral("yes"));
    }
  }

  void generateStreamsTheEngineText() {
    struct Case {
      QString prompt;
      int tokens, top_k, seed;
      double temperature;
    };
    // Greedy, then sampled at a high temperature (invalid UTF-8 bytes: replacement characters).
    for (const Case& c : {Case{"Line 1", 60, 0, 1, 0.0}, Case{"the", 80, 0, 7, 1.5}}) {
      td::gui::GenerateDialog* d = tab()->openGenerate(row_of(tab(), 20));
      QVERIFY(d);
      QVERIFY(d->generateButton()->isEnabled());
      d->promptEdit()->setText(c.prompt);
      d->tokensBox()->setValue(c.tokens);
      d->temperatureBox()->setValue(c.temperature);
      d->topKBox()->setValue(c.top_k);
      d->seedBox()->setValue(c.seed);
      QSignalSpy appended(d->job(), &td::gui::SampleJob::textAppended);
      QSignalSpy finished(d->job(), &td::gui::SampleJob::finished);
      d->generateButton()->click();
      QVERIFY(d->stopButton()->isEnabled());
      QVERIFY2(finished.wait(kSlowMs), "waited for the generation to finish");
      QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(2).toString()));
      QVERIFY(!appended.isEmpty());
      // The reference: the engine's sample without --stream, the same checkpoint and options.
      QByteArray ref;
      const QString err = run_engine({"sample", "--checkpoint", step_dir(run_, 20), "--prompt", c.prompt, "--tokens",
                                      QString::number(c.tokens), "--temperature", QString::number(c.temperature), "--top-k",
                                      QString::number(c.top_k), "--seed", QString::number(c.seed)},
                                     &ref);
      QVERIFY2(err.isEmpty(), qPrintable(err));
      QVERIFY(ref.startsWith(c.prompt.toUtf8()) && ref.size() > c.prompt.size() + 10);
      QCOMPARE(d->job()->text(), QString::fromUtf8(ref));
      if (c.temperature == 0) QCOMPARE(d->output()->toPlainText(), QString::fromUtf8(ref));
      QVERIFY2(d->statusLabel()->text().startsWith("Done"), qPrintable(d->statusLabel()->text()));
      QVERIFY(d->generateButton()->isEnabled() && !d->stopButton()->isEnabled());
      d->close();
    }
  }

  void engineErrorsAreShown() {
    td::gui::GenerateDialog* d = tab()->openGenerate(row_of(tab(), 20));
    QVERIFY(d);
    d->setCheckpoint(dir_.filePath("no-such-checkpoint"));
    QSignalSpy finished(d->job(), &td::gui::SampleJob::finished);
    d->generate();
    QVERIFY2(finished.wait(kSlowMs), "waited for the failing generation to end");
    QVERIFY(!finished.front().at(0).toBool());
    const QString status = d->statusLabel()->text();
    QVERIFY2(status.contains("no-such-checkpoint") && status.contains("exited with code 1"), qPrintable(status));
    d->close();
  }

  void stopEndsAGeneration() {
    td::gui::GenerateDialog* d = tab()->openGenerate(row_of(tab(), 20));
    QVERIFY(d);
    d->tokensBox()->setValue(1 << 20);  // far more than it writes before Stop
    QSignalSpy appended(d->job(), &td::gui::SampleJob::textAppended);
    QSignalSpy finished(d->job(), &td::gui::SampleJob::finished);
    d->generateButton()->click();
    QTRY_VERIFY2_WITH_TIMEOUT(d->job()->text().size() > 20, "waited for the first streamed text", kSlowMs);
    QVERIFY(finished.isEmpty());  // still generating: the text arrived while the engine runs
    d->stopButton()->click();
    QVERIFY2(finished.wait(kSlowMs), "waited for the stopped generation to end");
    QVERIFY(!finished.front().at(0).toBool() && finished.front().at(1).toBool());
    QCOMPARE(d->statusLabel()->text(), QStringLiteral("Stopped."));
    QVERIFY(!d->job()->isRunning() && d->generateButton()->isEnabled());
    d->close();
  }

  void keptCheckpointSurvivesPruning() {
    const int r10 = row_of(tab(), 10);
    QString error;
    QVERIFY2(tab()->setKept(r10, true, &error), qPrintable(error));
    QVERIFY(QFileInfo(run_ + "/checkpoints/step_00000010.keep").isFile());
    reload_and_wait();
    QVERIFY(tab()->rows()[row_of(tab(), 10)].kept);
    tab()->table()->selectRow(row_of(tab(), 10));
    QCOMPARE(tab()->findChild<QPushButton*>("checkpoint_keep")->text(), QStringLiteral("Unkeep"));
    // A resume to step 40 that keeps only the newest checkpoint.
    const QString err = run_engine({"train", "--config", cfg_, "--out", run_, "--resume", "--db", db_, "--experiment", "t", "--set",
                                    "train.steps=40", "--set", "train.keep_checkpoints=1", "--quiet", "--no-events-stdout"});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QCOMPARE(QDir(run_ + "/checkpoints").entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList({"step_00000010", "step_00000040"}));
    reload_and_wait();
    const auto rows = tab()->rows();
    QCOMPARE(rows.size(), 4);
    QStringList seen;
    for (const Row& row : rows) seen << QStringLiteral("%1:%2:%3").arg(row.step).arg(row.on_disk ? "disk" : "pruned").arg(row.kept ? "kept" : "-");
    QCOMPARE(seen, QStringList({"10:disk:kept", "20:pruned:-", "30:pruned:-", "40:disk:-"}));
    QCOMPARE(tab()->table()->item(1, 4)->text(), QStringLiteral("pruned"));
    QCOMPARE(rows[3].bytes, folder_bytes(step_dir(run_, 40)));
    // A pruned row offers nothing to do.
    QVERIFY(!tab()->openGenerate(1));
  }

  void deleteRemovesExactlyThatFolder() {
    // Refused: a symlinked step folder (its target stays), a name that is not step_ + 8 digits.
    const QString outside = dir_.filePath("outside/step_00000099");
    tdguitest::writeFile(outside + "/model.safetensors", "precious");
    QVERIFY(QFile::link(outside, run_ + "/checkpoints/step_00000099"));
    QString why = td::gui::removeCheckpointDir(run_ + "/checkpoints", "step_00000099");
    QVERIFY2(why.contains("symbolic link"), qPrintable(why));
    QVERIFY(QFileInfo(outside + "/model.safetensors").isFile());
    QVERIFY(QFileInfo(run_ + "/checkpoints/step_00000099").isSymLink());
    why = td::gui::removeCheckpointDir(run_ + "/checkpoints", "../checkpoints");
    QVERIFY2(why.contains("not a checkpoint folder name"), qPrintable(why));
    QVERIFY(QFileInfo(run_ + "/checkpoints").isDir());
    QVERIFY(QFile::remove(run_ + "/checkpoints/step_00000099"));
    // The kept step 10, through the tab: its folder and marker go, step 40 stays whole.
    const qint64 bytes40 = folder_bytes(step_dir(run_, 40));
    QSignalSpy done(tab(), &td::gui::CheckpointsTab::deleteFinished);
    tab()->deleteRow(row_of(tab(), 10));
    QVERIFY2(done.wait(kSlowMs), "waited for the delete of step 10");
    QVERIFY2(done.front().at(1).toString().isEmpty(), qPrintable(done.front().at(1).toString()));
    QCOMPARE(done.front().at(0).toString(), step_dir(run_, 10));
    QVERIFY(!QFileInfo::exists(step_dir(run_, 10)));
    QVERIFY(!QFileInfo::exists(run_ + "/checkpoints/step_00000010.keep"));
    QCOMPARE(folder_bytes(step_dir(run_, 40)), bytes40);
    QCOMPARE(QDir(run_ + "/checkpoints").entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList({"step_00000040"}));
    reload_and_wait();
    QVERIFY(!tab()->rows()[row_of(tab(), 10)].on_disk);
  }

  void exportWritesAHuggingFaceFolder() {
    const QString out = dir_.filePath("exports/ck-40");
    for (int round = 0; round < 2; ++round) {  // the second replaces the first (an earlier export: --force)
      td::gui::ExportDialog* d = tab()->openExport(row_of(tab(), 40));
      QVERIFY(d);
      QCOMPARE(d->folderEdit()->text(), run_ + "/exports/step_00000040-hf");
      d->folderEdit()->setText(out);
      QSignalSpy finished(d->job(), &td::gui::ExportJob::finished);
      QSignalSpy progress(d->job(), &td::gui::ExportJob::progress);
      d->exportButton()->click();
      QVERIFY2(finished.wait(kSlowMs), "waited for the export to finish");
      QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(1).toString()));
      QVERIFY(progress.size() > 5);
      QCOMPARE(progress.back().at(0).toInt(), progress.back().at(1).toInt());
      QCOMPARE(d->progressBar()->value(), d->progressBar()->maximum());
      QVERIFY2(d->statusLabel()->text().startsWith("exported step 40 of "), qPrintable(d->statusLabel()->text()));
      QCOMPARE(d->exportedDir(), out);
      QVERIFY(d->openButton()->isEnabled());
      d->close();
    }
    QFile f(out + "/config.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto config = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(config["n_layer"].get<int>(), 1);
    QCOMPARE(config["n_embd"].get<int>(), 32);
    QCOMPARE(config["model_type"].get<std::string>(), std::string("gpt2"));
    QVERIFY(QFileInfo(out + "/model.safetensors").size() > 10000);
    // A non-empty folder that is not an export is refused before the engine starts.
    tdguitest::writeFile(dir_.filePath("notes/todo.txt"), "mine");
    td::gui::ExportDialog* d = tab()->openExport(row_of(tab(), 40));
    d->folderEdit()->setText(dir_.filePath("notes"));
    d->exportButton()->click();
    QVERIFY2(d->statusLabel()->text().contains("not an earlier export"), qPrintable(d->statusLabel()->text()));
    QVERIFY(!d->job()->isRunning());
    QVERIFY(QFileInfo(dir_.filePath("notes/todo.txt")).isFile());
    d->close();
  }

  void remoteRunRowsFromTheNodeListing() {
    // A second run, recorded as remote (its events file is a local mirror; here a real local run
    // so that a cached copy of its checkpoint can be generated from).
    const QString rk = dir_.filePath("runs/rk");
    const QString err = run_engine({"train", "--config", cfg_, "--out", rk, "--run-id", "rk", "--db", db_, "--experiment", "t",
                                    "--quiet", "--no-events-stdout"});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    client_->exec(this, [](td::store::Store& s) {
      s.note_remote_run({"rk", "lab", R"({"host":"gpu1","name":"gpu1"})", "/home/u/traindeck/runs/rk", std::nullopt, 0, ""});
    });
    QVERIFY(client_->waitIdle(kSlowMs));
    auto* remote = new td::gui::RemoteRunController(client_.get(), [](const td::remote::NodeSpec&) -> td::remote::Session {
      throw td::Error("no node in this test");
    });
    QVERIFY(targets_->add(remote));
    QSignalSpy errors(targets_.get(), &td::gui::RunTarget::error);
    view_->setRun(QStringLiteral("rk"));
    QVERIFY(client_->waitIdle(kSlowMs));
    QTRY_VERIFY2_WITH_TIMEOUT(!errors.isEmpty(), qPrintable("waited for the listing to fail (no node); the tab says: " +
                                                            tab()->findChild<QLabel*>("checkpoint_note")->text()),
                              kSlowMs);
    QSignalSpy reloaded(tab(), &td::gui::CheckpointsTab::reloaded);
    emit remote->checkpointsListed("rk", {{"step_00000010", 10, 1234}, {"step_00000020", 20, 5678000}});
    QCOMPARE(reloaded.size(), 1);
    const auto rows = tab()->rows();
    QCOMPARE(rows.size(), 2);
    QVERIFY(rows[0].remote && rows[1].remote);
    QCOMPARE(rows[1].bytes, qint64(5678000));
    QCOMPARE(tab()->table()->item(1, 1)->text(), QStringLiteral("5.68 MB"));
    QCOMPARE(tab()->table()->item(1, 4)->text(), QStringLiteral("on the node"));
    QString why;
    QVERIFY(!tab()->setKept(1, true, &why));  // Keep is for local checkpoints
    // Step 20 is in the cache (as a download leaves it): Generate runs on that copy at once.
    // (QStandardPaths' test mode puts the cache under ~/.qttest: this run's folder is emptied first and removed at the end.)
    const QString cached = td::gui::CheckpointsTab::remoteCacheRoot() + "/rk/step_00000020";
    QDir(td::gui::CheckpointsTab::remoteCacheRoot() + "/rk").removeRecursively();
    QVERIFY(QDir().mkpath(cached));
    for (const QFileInfo& f : QDir(step_dir(rk, 20)).entryInfoList(QDir::Files)) QVERIFY(QFile::copy(f.filePath(), cached + "/" + f.fileName()));
    td::gui::GenerateDialog* d = tab()->openGenerate(1);
    QVERIFY(d && d->generateButton()->isEnabled());
    d->promptEdit()->setText("Line 2");
    d->tokensBox()->setValue(30);
    d->temperatureBox()->setValue(0);
    QSignalSpy finished(d->job(), &td::gui::SampleJob::finished);
    d->generate();
    QVERIFY2(finished.wait(kSlowMs), "waited for the generation from the cached checkpoint");
    QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(2).toString()));
    QByteArray ref;
    const QString rerr = run_engine({"sample", "--checkpoint", step_dir(rk, 20), "--prompt", "Line 2", "--tokens", "30", "--temperature",
                                     "0", "--top-k", "40", "--seed", "1"},
                                    &ref);
    QVERIFY2(rerr.isEmpty(), qPrintable(rerr));
    QCOMPARE(d->job()->text(), QString::fromUtf8(ref));
    d->close();
    // Step 10 is not: the download is asked for, fails (no node), and the dialog says why.
    d = tab()->openGenerate(0);
    QVERIFY(d && !d->generateButton()->isEnabled());
    QTRY_VERIFY2_WITH_TIMEOUT(d->statusLabel()->text().contains("could not be downloaded") &&
                                  d->statusLabel()->text().contains("no node in this test"),
                              qPrintable(d->statusLabel()->text()), kSlowMs);
    QVERIFY(!d->generateButton()->isEnabled());
    d->close();
    delete remote;  // the SSH target leaves the router
    QVERIFY(QDir(td::gui::CheckpointsTab::remoteCacheRoot() + "/rk").removeRecursively());
  }

  void cleanupTestCase() {
    view_.reset();
    targets_.reset();
    client_.reset();
  }
};

QTEST_MAIN(TestCheckpointsTab)
#include "test_checkpoints_tab.moc"
