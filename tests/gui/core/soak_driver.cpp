// The workbench's store side, alone, for test_store_soak: a StoreClient (the GUI's store thread)
// follows N runs' events files through RunTail, as the GUI's followers do, and makes GUI-like
// writes (an experiment, a run's notes) every few milliseconds. It prints "saved K" once job K's
// write has been delivered (the GUI's "saved" moment: the job returned, its transaction
// committed). It runs until killed.
//   soak_driver STORE EVENTS_DIR N_RUNS FIRST_K
#include <QCoreApplication>
#include <QTimer>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gui/core/store_client.h"
#include "store/run_tail.h"

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  if (argc != 5) {
    std::fprintf(stderr, "usage: soak_driver STORE EVENTS_DIR N_RUNS FIRST_K\n");
    return 2;
  }
  const QString store = QString::fromLocal8Bit(argv[1]);
  const std::string dir = argv[2];
  const int runs = std::atoi(argv[3]);
  int k = std::atoi(argv[4]);
  td::gui::StoreClient client(store);
  // The followers live on the store thread (RunTail holds that thread's Store).
  auto tails = std::make_shared<std::vector<std::unique_ptr<td::store::RunTail>>>();
  QTimer timer;
  timer.setInterval(5);
  QObject::connect(&timer, &QTimer::timeout, [&] {
    if (client.pending() > 8) return;  // never pile up jobs
    client.exec(&app, [tails, dir, runs](td::store::Store& s) {
      if (tails->empty())
        for (int r = 0; r < runs; ++r)
          tails->push_back(std::make_unique<td::store::RunTail>(s, "soak-run-" + std::to_string(r),
                                                                dir + "/run" + std::to_string(r) + ".jsonl", "soak"));
      for (auto& t : *tails) t->ingest(0.02);
    });
    const int mine = k++;
    client.exec(
        &app,
        [mine, runs](td::store::Store& s) {
          s.ensure_experiment("soak-" + std::to_string(mine));
          const std::string run = "soak-run-" + std::to_string(mine % runs);
          if (s.find_run(run)) s.set_run_notes(run, "note " + std::to_string(mine));
        },
        [mine] {
          std::printf("saved %d\n", mine);
          std::fflush(stdout);
        },
        [](const QString& m) { std::fprintf(stderr, "soak_driver: %s\n", qPrintable(m)); });
  });
  timer.start();
  return app.exec();
}
