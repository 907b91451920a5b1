// PrepareJob with the real engine: hand-counted byte tokens, progress to the end, registration in
// the store, reuse, the engine's own messages for bad inputs (nothing left, nothing registered),
// and cancel of a large job (no partial folder; a folder that existed before is kept).
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/core/store_client.h"
#include "gui/prepare/prepare_job.h"
#include "store/store.h"
#include "../gui_test_util.h"

using td::gui::PrepareJob;
using td::gui::PrepareRequest;
using td::gui::StoreClient;

namespace {

using tdguitest::text;
using tdguitest::writeFile;

// Nothing named <out> or <out>.tmp-* in its folder.
bool nothingLeft(const QString& out) {
  const QFileInfo fi(out);
  return !fi.exists() && QDir(fi.absolutePath()).entryList({fi.fileName() + ".tmp-*"}, QDir::AllEntries | QDir::Hidden).isEmpty();
}

// A ~64 MB corpus: encoding takes a second or more, so a cancel lands mid-way.
void writeLargeCorpus(const QString& path) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  const QByteArray block = text(1 << 20, 3);
  for (int i = 0; i < 64; ++i) QCOMPARE(f.write(block), block.size());
}

}  // namespace

class TestPrepareJob : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE); }

  void argumentsAreTheEngineOptions() {
    PrepareRequest r;
    r.inputs = {"/c/a.txt", "/c/dir/"};
    r.out_dir = "/d/x/../ds";
    r.tokenizer = "bpe";
    r.vocab_size = 500;
    r.val_fraction = 0.25;
    QCOMPARE(PrepareJob::arguments(r),
             (QStringList{"prepare", "--input=/c/a.txt", "--input=/c/dir", "--out=/d/ds", "--tokenizer=bpe",
                          "--vocab-size=500", "--val-fraction=0.25", "--progress-json"}));
    r.tokenizer = "byte";
    r.vocab_size = 0;
    QVERIFY(!PrepareJob::arguments(r).join(' ').contains("--vocab-size"));
  }

  // Three 1000-byte files and a 1096-byte one, val_fraction 0.1: T = 4096 bytes, the val split
  // is the last round(409.6) = 410 bytes, so the cut is at byte 3686, inside the 4th file.
  // Byte tokenizer: one token per byte, one end-of-text token after each document (file), the
  // 4th file's going with val: train = 3686 + 3 = 3689, val = 410 + 1 = 411.
  void bytePrepareCountsTokensAndRegisters() {
    QTemporaryDir dir;
    for (int i = 0; i < 3; ++i) writeFile(dir.filePath(QString("corpus/f%1.txt").arg(i)), text(1000, char(i)));
    writeFile(dir.filePath("corpus/f3.txt"), text(1096, 9));
    StoreClient store(dir.filePath("td.db"));
    PrepareJob job;
    job.setStoreClient(&store);
    QSignalSpy prog(&job, &PrepareJob::progress), fin(&job, &PrepareJob::finished), fail(&job, &PrepareJob::failed);
    PrepareRequest r;
    r.inputs = {dir.filePath("corpus")};
    r.out_dir = dir.filePath("datasets/c1");
    r.val_fraction = 0.1;
    QVERIFY(job.start(r));
    QVERIFY(job.isRunning());
    QVERIFY(!job.start(r));  // one at a time
    QTRY_COMPARE_WITH_TIMEOUT(fin.count() + fail.count(), 1, 60000);
    QVERIFY2(fail.isEmpty(), fail.isEmpty() ? "" : qPrintable(fail[0][0].toString()));
    QVERIFY(!job.isRunning());
    QVERIFY(!prog.isEmpty());
    QCOMPARE(prog.last()[0].toLongLong(), 4096);  // the last report: all input bytes
    QCOMPARE(prog.last()[1].toLongLong(), 4096);
    const QJsonObject m = fin[0][0].toJsonObject();
    QCOMPARE(fin[0][1].toString(), dir.filePath("datasets/c1"));
    QCOMPARE(m["splits"]["train"]["tokens"].toInteger(), 3689);
    QCOMPARE(m["splits"]["val"]["tokens"].toInteger(), 411);
    QCOMPARE(m["tokenizer"]["vocab_size"].toInt(), 257);
    QVERIFY(!job.reused());
    QVERIFY(job.manifestText().contains("\"mtime_ns\""));

    // Registered: the store's row has the same numbers.
    std::vector<td::store::Dataset> rows;
    store.run<std::vector<td::store::Dataset>>(this, [](td::store::Store& s) { return s.list_datasets(); },
                                               [&](std::vector<td::store::Dataset> v) { rows = std::move(v); });
    QVERIFY(store.waitIdle());
    QCOMPARE(rows.size(), size_t(1));
    QCOMPARE(QString::fromStdString(rows[0].path), dir.filePath("datasets/c1"));
    QCOMPARE(rows[0].train_tokens, int64_t(3689));
    QCOMPARE(rows[0].val_tokens, int64_t(411));
    QCOMPARE(rows[0].files, int64_t(4));
    QCOMPARE(rows[0].tokenizer, std::string("byte"));

    // The same request again: the engine reuses the dataset ("already prepared").
    prog.clear();
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(fin.count() + fail.count(), 2, 60000);
    QCOMPARE(fin.count(), 2);
    QVERIFY(job.reused());
    const QJsonObject m2 = fin[1][0].toJsonObject();
    QCOMPARE(m2["splits"]["train"]["tokens"].toInteger(), 3689);
  }

  void badInputsShowTheEngineMessage() {
    QTemporaryDir dir;
    QDir().mkpath(dir.filePath("empty"));
    StoreClient store(dir.filePath("td.db"));
    PrepareJob job;
    job.setStoreClient(&store);
    QSignalSpy fin(&job, &PrepareJob::finished), fail(&job, &PrepareJob::failed);
    PrepareRequest r;
    r.inputs = {dir.filePath("empty")};
    r.out_dir = dir.filePath("datasets/e");
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(fail.count(), 1, 60000);
    QString msg = fail[0][0].toString();
    QVERIFY2(msg.startsWith("the corpus is empty: no text file found in the inputs"), qPrintable(msg));
    QVERIFY(!msg.contains("error:"));

    r.inputs = {dir.filePath("missing")};
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(fail.count(), 2, 60000);
    msg = fail[1][0].toString();
    QVERIFY2(msg.contains("does not exist") && msg.contains(dir.filePath("missing")), qPrintable(msg));
    QVERIFY(fin.isEmpty());
    QVERIFY(nothingLeft(dir.filePath("datasets/e")));
    QVERIFY(!QFileInfo::exists(dir.filePath("datasets")));  // the engine removes parents it created

    std::vector<td::store::Dataset> rows{td::store::Dataset{}};
    store.run<std::vector<td::store::Dataset>>(this, [](td::store::Store& s) { return s.list_datasets(); },
                                               [&](std::vector<td::store::Dataset> v) { rows = std::move(v); });
    QVERIFY(store.waitIdle());
    QVERIFY(rows.empty());

    // A request that cannot start: failed(), queued, and no job.
    QSignalSpy fail2(&job, &PrepareJob::failed);
    QVERIFY(!job.start(PrepareRequest{}));
    QVERIFY(fail2.isEmpty());
    QTRY_COMPARE(fail2.count(), 1);
    QVERIFY(fail2[0][0].toString().contains("No input"));
    QVERIFY(!job.isRunning());
  }

  // BPE on a small corpus: the vocab_size asked for is the manifest's, and every byte of the
  // text is covered (byte_fallback), so train + val tokens are at least one per document.
  void bpePrepareUsesVocabSize() {
    QTemporaryDir dir;
    QByteArray words;
    for (int i = 0; i < 400; ++i) words += "the quick brown fox jumps over the lazy dog " + QByteArray::number(i % 37) + "\n";
    writeFile(dir.filePath("c/a.txt"), words);
    PrepareJob job;
    QSignalSpy fin(&job, &PrepareJob::finished), fail(&job, &PrepareJob::failed);
    PrepareRequest r;
    r.inputs = {dir.filePath("c")};
    r.out_dir = dir.filePath("ds");
    r.tokenizer = "bpe";
    r.vocab_size = 320;
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(fin.count() + fail.count(), 1, 120000);
    QVERIFY2(fail.isEmpty(), fail.isEmpty() ? "" : qPrintable(fail[0][0].toString()));
    const QJsonObject m = fin[0][0].toJsonObject();
    QCOMPARE(m["tokenizer"]["kind"].toString(), QString("bpe"));
    QCOMPARE(m["tokenizer"]["vocab_size"].toInt(), 320);
    const qint64 tokens = m["splits"]["train"]["tokens"].toInteger() + m["splits"]["val"]["tokens"].toInteger();
    QVERIFY(tokens > 400 && tokens < words.size());  // merges: fewer tokens than bytes
    QVERIFY(QFile::exists(dir.filePath("ds/tokenizer.model")));
  }

  // Cancel before the engine reports anything (starting, walking, training the tokenizer):
  // SIGTERM, then SIGKILL after the grace period at the latest; nothing is left.
  void cancelBeforeAnyProgress() {
    QTemporaryDir dir;
    writeLargeCorpus(dir.filePath("big.txt"));
    PrepareJob job;
    job.setCancelGraceMs(500);
    QSignalSpy can(&job, &PrepareJob::cancelled), fin(&job, &PrepareJob::finished), fail(&job, &PrepareJob::failed);
    PrepareRequest r;
    r.inputs = {dir.filePath("big.txt")};
    r.out_dir = dir.filePath("ds");
    r.tokenizer = "bpe";
    r.vocab_size = 4000;
    QVERIFY(job.start(r));
    job.cancel();
    QCOMPARE(job.state(), PrepareJob::State::Cancelling);
    QTRY_COMPARE_WITH_TIMEOUT(can.count(), 1, 60000);
    QVERIFY(fin.isEmpty() && fail.isEmpty());
    QVERIFY(nothingLeft(dir.filePath("ds")));
    job.cancel();  // idle: nothing happens
    QCOMPARE(can.count(), 1);
  }

  // Cancel as soon as the first progress report arrives (~250 ms into a job of a second or
  // more): the engine's partial output and the folders it created are gone, cancelled() once.
  void cancelRemovesPartialOutput() {
    QTemporaryDir dir;
    writeLargeCorpus(dir.filePath("big.txt"));
    PrepareJob job;
    QSignalSpy can(&job, &PrepareJob::cancelled), fin(&job, &PrepareJob::finished), fail(&job, &PrepareJob::failed);
    connect(&job, &PrepareJob::progress, &job, [&job] { job.cancel(); });
    PrepareRequest r;
    r.inputs = {dir.filePath("big.txt")};
    r.out_dir = dir.filePath("new/sub/ds");  // "new" does not exist yet
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(can.count(), 1, 60000);
    QVERIFY(fin.isEmpty());
    QVERIFY(fail.isEmpty());
    QVERIFY(!job.isRunning());
    QVERIFY(!QFileInfo::exists(dir.filePath("new")));
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"big.txt"});
  }

  void cancelKeepsAFolderThatExistedBefore() {
    QTemporaryDir dir;
    writeLargeCorpus(dir.filePath("big.txt"));
    QVERIFY(QDir().mkpath(dir.filePath("ds")));  // an empty folder: prepare may fill it
    PrepareJob job;
    QSignalSpy can(&job, &PrepareJob::cancelled);
    connect(&job, &PrepareJob::progress, &job, [&job] { job.cancel(); });
    PrepareRequest r;
    r.inputs = {dir.filePath("big.txt")};
    r.out_dir = dir.filePath("ds");
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(can.count(), 1, 60000);
    QVERIFY(QFileInfo(dir.filePath("ds")).isDir());
    QVERIFY(QDir(dir.path()).entryList({"ds.tmp-*"}, QDir::AllEntries | QDir::Hidden).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestPrepareJob)
#include "test_prepare_job.moc"
