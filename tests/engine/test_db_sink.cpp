// `traindeck-engine train --db`: the store never loses or mixes runs (issue 13, section 3). Every
// case runs the built engine and reads the store back: a run that fails keeps its end.
#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "store/store.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

class TestDbSink : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, cfg_;

  QString path(const QString& name) const { return dir_.filePath(name); }
  QStringList train_args(const QString& out, QStringList extra = {}) const {
    return QStringList{"train", "--config", cfg_, "--out", out, "--quiet", "--no-events-stdout"} + extra;
  }
  ProcResult train(const QString& out, QStringList extra = {}) { return engine(train_args(out, extra), 300000); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    write_file(path("corpus.txt"), generated_text(3000));
    data_ = path("ds");
    auto r = engine({"prepare", "--input", path("corpus.txt"), "--out", data_, "--quiet"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    json c = {{"model", {{"vocab_size", 257}, {"seq_len", 16}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 16}}},
              {"train", {{"threads", 1}, {"steps", 20}, {"micro_batch", 4}, {"eval_interval", 0}, {"sample_interval", 0},
                         {"checkpoint_interval", 10}, {"keep_checkpoints", 3}}},
              {"data", {{"path", data_.toStdString()}}}};
    cfg_ = path("cfg.json");
    std::ofstream(cfg_.toStdString()) << c.dump();
  }

  // Finding 1: a checkpoint that cannot be written (a file named `checkpoints` where the folder
  // goes; chmod does not stop root) fails the run; the store says failed at the last step.
  void a_failed_run_is_failed_in_the_store() {
    const QString out = path("ckfail"), db = path("ckfail.db");
    QVERIFY(QDir().mkpath(out));
    write_file(out + "/checkpoints", "in the way\n");
    auto r = train(out, {"--db", db, "--run-id", "ckfail"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("error: "), qPrintable(r.err));
    auto ev = read_events(out + "/events.jsonl");
    auto ends = events_of_type(ev, "run_end");
    QCOMPARE(ends.size(), size_t(1));
    QCOMPARE(ends[0]["status"].get<std::string>(), std::string("failed"));
    td::store::Store st(db.toStdString());
    const auto run = st.get_run("ckfail");
    QCOMPARE(run.status, std::string("failed"));
    QCOMPARE(*run.last_step, int64_t(10));  // the checkpoint at step 10 failed
    QVERIFY(!run.end_reason.empty());
    QCOMPARE(st.metric_series("ckfail", "loss").size(), size_t(10));
  }
};

QTEST_GUILESS_MAIN(TestDbSink)
#include "test_db_sink.moc"
