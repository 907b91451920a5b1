// DataPanel driven with QTest against the real engine and a real store: a byte prepare shows the
// hand-counted token numbers and skipped files and registers the dataset; the BPE options;
// cancel of a large job leaves nothing; bad inputs show the engine's message and register
// nothing; Forget asks first and keeps the files.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "gui/data/data_panel.h"
#include "gui/data/manifest_view.h"
#include "store/store.h"
#include "../gui_test_util.h"

using td::gui::DataPanel;
using td::gui::ManifestView;
using td::gui::StoreClient;

namespace {

using tdguitest::text;
using tdguitest::writeFile;

template <class T>
T* child(QWidget& w, const char* name) {
  T* c = w.findChild<T*>(QString::fromLatin1(name));
  if (!c) qFatal("no child %s", name);
  return c;
}

QString num(qlonglong v) { return QLocale().toString(v); }

}  // namespace

class TestDataPanel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE); }

  // corpus/: f0..f2.txt of 1000 bytes, f3.txt of 1096 bytes (T = 4096 text bytes), plus
  // blob.bin (skipped: extension) and nul.txt (skipped: binary). val_fraction 0.1: the val split
  // is the last round(409.6) = 410 bytes; byte tokenizer, one end-of-text token per file:
  // train = (4096 - 410) + 3 = 3689 tokens, val = 410 + 1 = 411.
  void bytePrepareShowsManifestAndRegisters() {
    QTemporaryDir dir;
    for (int i = 0; i < 3; ++i) writeFile(dir.filePath(QString("corpus/f%1.txt").arg(i)), text(1000, char(i)));
    writeFile(dir.filePath("corpus/f3.txt"), text(1096, 9));
    writeFile(dir.filePath("corpus/blob.bin"), "abc\n");
    writeFile(dir.filePath("corpus/nul.txt"), QByteArray("ab\0cd\n", 6));
    StoreClient store(dir.filePath("td.db"));
    DataPanel panel(&store);
    panel.show();
    QSignalSpy ready(&panel, &DataPanel::datasetReady), changed(&panel, &DataPanel::datasetsChanged);
    QTRY_COMPARE(changed.count(), 1);  // the (empty) list was loaded
    QVERIFY(panel.datasets().isEmpty());

    auto* prepare = child<QPushButton>(panel, "prepareButton");
    QVERIFY(!prepare->isEnabled());  // no source yet
    panel.addSource(dir.filePath("corpus"));
    panel.addSource(dir.filePath("corpus/"));  // the same folder: listed once
    QCOMPARE(panel.sources(), QStringList{dir.filePath("corpus")});
    // Default output: <store folder>/datasets/<source name>-<tokenizer>.
    const QString out = dir.filePath("datasets/corpus-byte");
    QCOMPARE(td::gui::datasetsRoot(store.path()), dir.filePath("datasets"));
    QCOMPARE(panel.outputDir(), out);
    QVERIFY(!child<QSpinBox>(panel, "vocabSpin")->isEnabled());  // byte: no vocab_size
    auto* val = child<QDoubleSpinBox>(panel, "valFractionSpin");
    val->selectAll();
    QTest::keyClicks(val, QString("0") + QLocale().decimalPoint() + "1");
    QCOMPARE(val->value(), 0.1);

    QVERIFY(prepare->isEnabled());
    QTest::mouseClick(prepare, Qt::LeftButton);
    QVERIFY(panel.isPreparing());
    QVERIFY(!prepare->isEnabled());
    QVERIFY(child<QPushButton>(panel, "cancelButton")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60000);
    QCOMPARE(ready[0][0].toString(), out);
    QCOMPARE(ready[0][1].toInt(), 257);  // the byte tokenizer's ids: the model's vocab_size
    auto* bar = child<QProgressBar>(panel, "progressBar");
    QCOMPARE(bar->maximum(), 100);
    QCOMPARE(bar->value(), 100);
    QVERIFY(!panel.isPreparing());

    auto* view = child<ManifestView>(panel, "manifestView");
    QCOMPARE(view->value(ManifestView::trainTokensLabel()), num(3689));
    QCOMPARE(view->value(ManifestView::valTokensLabel()), num(411));
    QCOMPARE(view->value(ManifestView::tokenizerLabel()), QString("byte"));
    QCOMPARE(view->value(ManifestView::vocabLabel()), num(257));
    QCOMPARE(view->value(ManifestView::filesLabel()), num(4));
    QCOMPARE(view->value(ManifestView::skippedLabel()), num(2));
    const QStringList skipped = view->children(ManifestView::skippedLabel());
    QCOMPARE(skipped.size(), 2);
    QVERIFY2(skipped[0].startsWith(dir.filePath("corpus/blob.bin") + ": extension '.bin'"), qPrintable(skipped[0]));
    QVERIFY2(skipped[1].startsWith(dir.filePath("corpus/nul.txt") + ": binary"), qPrintable(skipped[1]));
    QVERIFY2(child<QLabel>(panel, "statusLabel")->text().contains(num(3689)),
             qPrintable(child<QLabel>(panel, "statusLabel")->text()));

    // Registered, listed, selected.
    QTRY_COMPARE(panel.datasets(), QStringList{out});
    QCOMPARE(changed.last()[0].toStringList(), QStringList{out});
    auto* list = child<QTreeWidget>(panel, "datasetList");
    QCOMPARE(list->topLevelItemCount(), 1);
    QCOMPARE(list->topLevelItem(0)->text(0), QString("corpus-byte"));
    QCOMPARE(list->topLevelItem(0)->text(3), num(3689));
    QVERIFY(list->topLevelItem(0)->isSelected());

    // A second panel on the same store (a restart) lists it and shows its manifest from the store.
    DataPanel again(&store);
    QTRY_COMPARE(again.datasets(), QStringList{out});
    auto* view2 = child<ManifestView>(again, "manifestView");
    QVERIFY(view2->value(ManifestView::trainTokensLabel()).isEmpty());
    QVERIFY(again.selectDataset(out));
    QCOMPARE(view2->value(ManifestView::trainTokensLabel()), num(3689));
    QCOMPARE(view2->value(ManifestView::skippedLabel()), num(2));
  }

  void bpeEnablesVocabSize() {
    QTemporaryDir dir;
    StoreClient store(dir.filePath("td.db"));
    DataPanel panel(&store);
    panel.addSource(dir.filePath("books.txt"));
    QCOMPARE(panel.outputDir(), dir.filePath("datasets/books-byte"));
    auto* combo = child<QComboBox>(panel, "tokenizerCombo");
    auto* vocab = child<QSpinBox>(panel, "vocabSpin");
    combo->setCurrentIndex(combo->findData("bpe"));
    QVERIFY(vocab->isEnabled());
    vocab->selectAll();
    QTest::keyClicks(vocab, "500");
    QCOMPARE(vocab->value(), 500);
    QCOMPARE(panel.outputDir(), dir.filePath("datasets/books-bpe500"));
    panel.setTokenizer("byte");
    QVERIFY(!vocab->isEnabled());
    // An output folder the person typed stays.
    auto* outEdit = child<QLineEdit>(panel, "outputEdit");
    outEdit->selectAll();
    QTest::keyClicks(outEdit, dir.filePath("mine"));
    panel.setTokenizer("bpe", 1000);
    QCOMPARE(panel.outputDir(), dir.filePath("mine"));
  }

  void cancelLeavesNothing() {
    QTemporaryDir dir;
    {
      QFile f(dir.filePath("big.txt"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      const QByteArray block = text(1 << 20, 5);
      for (int i = 0; i < 64; ++i) QCOMPARE(f.write(block), block.size());  // 64 MB
    }
    StoreClient store(dir.filePath("td.db"));
    DataPanel panel(&store);
    QSignalSpy ready(&panel, &DataPanel::datasetReady);
    panel.addSource(dir.filePath("big.txt"));
    const QString out = dir.filePath("datasets/big-byte");
    QCOMPARE(panel.outputDir(), out);
    auto* bar = child<QProgressBar>(panel, "progressBar");
    auto* cancel = child<QPushButton>(panel, "cancelButton");
    QVERIFY(!cancel->isEnabled());
    // At the first progress report, press Cancel.
    connect(bar, &QProgressBar::valueChanged, cancel, [cancel] {
      if (cancel->isEnabled()) QTest::mouseClick(cancel, Qt::LeftButton);
    });
    QVERIFY(panel.startPrepare());
    auto* status = child<QLabel>(panel, "statusLabel");
    QTRY_VERIFY_WITH_TIMEOUT(status->text().startsWith("Cancelled"), 60000);
    QVERIFY(!panel.isPreparing());
    QVERIFY(ready.isEmpty());
    QCOMPARE(bar->value(), 0);
    QVERIFY(!QFileInfo::exists(dir.filePath("datasets")));  // nor out, nor out.tmp-*
    panel.reloadDatasets();
    QVERIFY(store.waitIdle());
    QVERIFY(panel.datasets().isEmpty());
    QVERIFY(child<QPushButton>(panel, "prepareButton")->isEnabled());  // ready for another try
  }

  void badInputShowsEngineMessage() {
    QTemporaryDir dir;
    QDir().mkpath(dir.filePath("empty"));
    StoreClient store(dir.filePath("td.db"));
    DataPanel panel(&store);
    QSignalSpy ready(&panel, &DataPanel::datasetReady);
    auto* status = child<QLabel>(panel, "statusLabel");
    QVERIFY(!panel.startPrepare());  // nothing to prepare
    QVERIFY(status->text().contains("Add files or folders"));

    panel.addSource(dir.filePath("empty"));
    QVERIFY(panel.startPrepare());
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isPreparing(), 60000);
    QVERIFY2(status->text().startsWith("the corpus is empty: no text file found in the inputs"), qPrintable(status->text()));

    QTest::mouseClick(child<QListWidget>(panel, "sourceList")->viewport(), Qt::LeftButton, {},
                      child<QListWidget>(panel, "sourceList")->visualItemRect(
                          child<QListWidget>(panel, "sourceList")->item(0)).center());
    QTest::mouseClick(child<QPushButton>(panel, "removeSourceButton"), Qt::LeftButton);
    QVERIFY(panel.sources().isEmpty());
    panel.addSource(dir.filePath("missing.txt"));
    QVERIFY(panel.startPrepare());
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isPreparing(), 60000);
    QVERIFY2(status->text().contains("does not exist"), qPrintable(status->text()));
    QVERIFY(ready.isEmpty());
    panel.reloadDatasets();
    QVERIFY(store.waitIdle());
    QVERIFY(panel.datasets().isEmpty());
    QVERIFY(!QFileInfo::exists(dir.filePath("datasets")));
  }

  void useInDesignGivesTheTokenizersVocab() {
    QTemporaryDir dir;
    StoreClient store(dir.filePath("td.db"));
    const QString ds = dir.filePath("owt-bpe8000");
    writeFile(ds + "/manifest.json", "{}");
    const std::string manifest =
        R"({"format":"traindeck-dataset","tokenizer":{"kind":"bpe","vocab_size":8000},)"
        R"("splits":{"train":{"tokens":900},"val":{"tokens":100}}})";
    store.exec(this, [&](td::store::Store& s) { s.register_dataset(ds.toStdString(), manifest); });
    QVERIFY(store.waitIdle());
    DataPanel panel(&store);
    panel.show();
    QTRY_COMPARE(panel.datasets(), QStringList{ds});
    QCOMPARE(panel.datasetVocabSize(ds), 8000);
    QCOMPARE(panel.datasetTokenizer(ds), QString("bpe"));
    QCOMPARE(panel.datasetVocabSize(dir.filePath("other")), 0);
    auto* use = child<QPushButton>(panel, "useDatasetButton");
    QVERIFY(!use->isEnabled());  // nothing selected
    QVERIFY(panel.selectDataset(ds));
    QVERIFY(use->isEnabled());
    QSignalSpy chosen(&panel, &DataPanel::datasetChosen);
    QTest::mouseClick(use, Qt::LeftButton);
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(chosen[0][0].toString(), ds);
    QCOMPARE(chosen[0][1].toInt(), 8000);
    QVERIFY(!panel.useDataset(dir.filePath("other")));  // not registered: nothing chosen
    QCOMPARE(chosen.count(), 1);
  }

  void forgetAsksAndKeepsFiles() {
    QTemporaryDir dir;
    StoreClient store(dir.filePath("td.db"));
    const QString ds = dir.filePath("ds");
    writeFile(ds + "/manifest.json", "{}");
    const std::string manifest =
        R"({"format":"traindeck-dataset","tokenizer":{"kind":"byte","vocab_size":257},)"
        R"("splits":{"train":{"tokens":90},"val":{"tokens":10}}})";
    store.exec(this, [&](td::store::Store& s) { s.register_dataset(ds.toStdString(), manifest); });
    QVERIFY(store.waitIdle());
    DataPanel panel(&store);
    panel.show();
    QTRY_COMPARE(panel.datasets(), QStringList{ds});
    auto* forget = child<QPushButton>(panel, "forgetButton");
    QVERIFY(!forget->isEnabled());  // nothing selected
    QVERIFY(panel.selectDataset(ds));
    QCOMPARE(child<ManifestView>(panel, "manifestView")->value(ManifestView::trainTokensLabel()), num(90));
    QVERIFY(forget->isEnabled());

    for (QMessageBox::StandardButton answer : {QMessageBox::Cancel, QMessageBox::Yes}) {
      QTest::mouseClick(forget, Qt::LeftButton);
      QMessageBox* box = nullptr;
      QTRY_VERIFY((box = panel.findChild<QMessageBox*>("forgetConfirm")) && box->isVisible());
      QVERIFY(box->text().contains(ds));
      QTest::mouseClick(box->button(answer), Qt::LeftButton);
      QVERIFY(store.waitIdle());
      QTRY_VERIFY(!panel.findChild<QMessageBox*>("forgetConfirm"));  // closed and deleted
      if (answer == QMessageBox::Cancel) QCOMPARE(panel.datasets(), QStringList{ds});
    }
    QTRY_VERIFY(panel.datasets().isEmpty());
    QVERIFY(QFile::exists(ds + "/manifest.json"));  // files stay
  }
};

QTEST_MAIN(TestDataPanel)
#include "test_data_panel.moc"
