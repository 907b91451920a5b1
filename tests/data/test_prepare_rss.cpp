// prepare of a generated 1 GB corpus with the byte tokenizer keeps peak RSS (VmHWM) under
// 300 MB: the corpus is streamed, never held in memory. prepare runs in a child process
// (td_prepare_helper); its peak RSS is read twice, by the child from /proc/self/status (VmHWM)
// and by this process from wait4's rusage (ru_maxrss). ctest label: slow (about 10-20 s).
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "data_test_util.h"

extern char** environ;

class TestPrepareRss : public QObject {
  Q_OBJECT
 private slots:
  void oneGigabyteByteCorpusUnder300MB() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    const std::string corpus = dir + "/corpus.txt", out = dir + "/ds", result = dir + "/result.json";
    // 1 GiB: a 1 MiB block of text written 1024 times.
    std::string block;
    while (block.size() < (1u << 20)) block += "The quick brown fox jumps over the lazy dog, line " + std::to_string(block.size()) + ".\n";
    block.resize(1u << 20);
    {
      std::ofstream f(corpus, std::ios::binary);
      for (int i = 0; i < 1024; ++i) f.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
    QElapsedTimer timer;
    timer.start();
    std::vector<std::string> args = {TD_PREPARE_HELPER, "--quiet", "--out", out, corpus};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, result.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    QCOMPARE(posix_spawn(&pid, TD_PREPARE_HELPER, &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    struct rusage ru {};
    QCOMPARE(wait4(pid, &status, 0, &ru), pid);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);
    double secs = timer.elapsed() / 1000.0;

    std::ifstream in(result);
    auto r = nlohmann::json::parse(in);
    long hwm_kb = r["vm_hwm_kb"].get<long>();
    qInfo("prepare 1 GiB (byte): %.1f s, %.0f MB/s; VmHWM %ld KB, ru_maxrss %ld KB", secs,
          1073.741824 / secs, hwm_kb, ru.ru_maxrss);
    QCOMPARE(r["train_tokens"].get<uint64_t>() + r["val_tokens"].get<uint64_t>(), (uint64_t(1) << 30) + 1);
    QCOMPARE(r["bytes_read"].get<uint64_t>(), uint64_t(1) << 30);
    QVERIFY(hwm_kb > 0);
    QVERIFY2(hwm_kb < 300 * 1024, "VmHWM over 300 MB");
    QVERIFY2(ru.ru_maxrss < 300 * 1024, "ru_maxrss over 300 MB");
  }
};

QTEST_APPLESS_MAIN(TestPrepareRss)
#include "test_prepare_rss.moc"
