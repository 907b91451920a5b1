// translations/*.ts: every translation keeps its source's placeholders (%1..%99, %n) and
// keyboard accelerators (&), so that QString::arg and the menus keep working in every language;
// and the file lrelease compiled into the build is the one in the source tree.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QXmlStreamReader>
#include <QtTest>

#include <algorithm>

namespace {

struct Message {
  QString context, source;
  QStringList forms;  // one, or one per plural form
  bool finished = true;
  bool vanished = false;
};

QList<Message> readTs(const QString& path) {
  QList<Message> out;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return out;
  QXmlStreamReader xml(&f);
  QString context;
  Message m;
  while (!xml.atEnd()) {
    xml.readNext();
    if (!xml.isStartElement()) continue;
    const auto name = xml.name();
    if (name == QLatin1String("name")) {
      context = xml.readElementText();
    } else if (name == QLatin1String("message")) {
      m = Message{context, {}, {}, true, false};
    } else if (name == QLatin1String("source")) {
      m.source = xml.readElementText();
    } else if (name == QLatin1String("translation")) {
      const auto type = xml.attributes().value(QLatin1String("type"));
      m.finished = type.isEmpty();
      m.vanished = type == QLatin1String("vanished") || type == QLatin1String("obsolete");
      // Either text or <numerusform> children.
      QString text;
      while (!(xml.isEndElement() && xml.name() == QLatin1String("translation")) && !xml.atEnd()) {
        xml.readNext();
        if (xml.isCharacters()) text += xml.text();
        if (xml.isStartElement() && xml.name() == QLatin1String("numerusform"))
          m.forms << xml.readElementText();
      }
      if (m.forms.isEmpty()) m.forms << text;
      out << m;
    }
  }
  if (xml.hasError()) qWarning("%s: %s", qPrintable(path), qPrintable(xml.errorString()));
  return out;
}

QStringList placeholders(const QString& s) {
  QStringList out;
  static const QRegularExpression re(QStringLiteral("%(\\d{1,2}|n)"));
  for (auto it = re.globalMatch(s); it.hasNext();) out << it.next().captured(0);
  std::sort(out.begin(), out.end());
  return out;
}

int accelerators(QString s) {
  s.remove(QStringLiteral("&&"));
  return int(s.count(QLatin1Char('&')));
}

}  // namespace

class TestLookTranslations : public QObject {
  Q_OBJECT

 private slots:
  void placeholdersAndAcceleratorsKept() {
    const QString ts = QStringLiteral(TD_SOURCE_DIR "/translations/traindeck_de.ts");
    const QList<Message> messages = readTs(ts);
    QVERIFY2(messages.size() > 100, qPrintable(QString::number(messages.size())));
    int checked = 0;
    for (const Message& m : messages) {
      if (m.vanished || !m.finished) continue;
      for (const QString& form : m.forms) {
        const QString where = m.context + ": \"" + m.source + "\" -> \"" + form + "\"";
        QVERIFY2(!form.isEmpty(), qPrintable(where));
        QVERIFY2(placeholders(form) == placeholders(m.source), qPrintable(where));
        QVERIFY2(accelerators(form) == accelerators(m.source), qPrintable(where));
        ++checked;
      }
    }
    QVERIFY(checked > 100);
  }

  void knownEntries() {
    const QList<Message> messages = readTs(QStringLiteral(TD_SOURCE_DIR "/translations/traindeck_de.ts"));
    auto find = [&](const char* context, const char* source) -> QStringList {
      for (const Message& m : messages)
        if (m.context == QLatin1String(context) && m.source == QLatin1String(source)) return m.forms;
      return {};
    };
    QCOMPARE(find("td::gui::AboutDialog", "About TrainDeck"), QStringList{"Über TrainDeck"});
    QCOMPARE(find("td::gui::MainWindow", "&File"), QStringList{"&Datei"});
    // Plural forms: German has two (one, other).
    QCOMPARE(find("td::gui::ExperimentsModel", "%n run(s)"), (QStringList{"%n Lauf", "%n Läufe"}));
  }
};

QTEST_APPLESS_MAIN(TestLookTranslations)
#include "test_look_translations.moc"
