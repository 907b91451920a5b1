// bench_prepare: MB/s of prepare's bpe ENCODING (not training) beside sentencepiece's own
// spm_encode CLI, same model and same 20 MB corpus in the same run; prints both and the ratio.
//   usage: bench_prepare [corpus_mb=20] [threads=0 (all cores)] [rounds=3]
// Each figure is the best of `rounds` runs, interleaved, so a busy machine disturbs it less;
// the load average at the start is printed because a shared machine skews a parallel ratio.
// Corpus: tinyshakespeare (../shared/data) repeated, else Debian's fortunes text files.
// prepare's figure is PrepareResult::encode_seconds: reading, UTF-8 checks, encoding on
// `threads` threads, writing shards and checksums. spm_encode's is its wall time for
// `spm_encode --model=M --output_format=id < corpus > /dev/null` (one thread, per line).
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "engine/common/error.h"
#include "engine/data/prepare.h"

extern char** environ;
namespace fs = std::filesystem;

// CPU seconds (user + system) of this process or of its waited-for children.
static double cpu_seconds(int who) {
  struct rusage ru {};
  getrusage(who, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

int main(int argc, char** argv) {
  const double corpus_mb = argc > 1 ? std::stod(argv[1]) : 20;
  const int threads = argc > 2 ? std::stoi(argv[2]) : 0;
  const int rounds = argc > 3 ? std::max(1, std::stoi(argv[3])) : 3;
  try {
    char tmpl[] = "/tmp/bench_prepare.XXXXXX";
    if (!mkdtemp(tmpl)) { perror("mkdtemp"); return 1; }
    fs::path dir = tmpl;
    // -- corpus
    std::string seed, source = TD_SOURCE_DIR "/../shared/data/tinyshakespeare.txt";
    if (fs::exists(source)) {
      seed = read_all(source);
    } else {
      source = "/usr/share/games/fortunes";
      for (auto& e : fs::directory_iterator(source))
        if (e.is_regular_file() && !e.path().has_extension()) seed += read_all(e.path());
    }
    const size_t want = static_cast<size_t>(corpus_mb * 1e6);
    fs::path corpus = dir / "corpus.txt";
    {
      std::ofstream out(corpus, std::ios::binary);
      for (size_t n = 0; n < want; n += seed.size()) out.write(seed.data(), static_cast<std::streamsize>(seed.size()));
    }
    const double mb = fs::file_size(corpus) / 1e6;
    // -- the model: trained once on the seed text (not timed)
    td::PrepareOptions t;
    t.inputs = {source};
    t.out_dir = (dir / "model").string();
    t.tokenizer = "bpe";
    t.vocab_size = 8000;
    t.bpe_sample_bytes = 4'000'000;
    t.quiet = true;
    td::PrepareResult tr = td::prepare_dataset(t);
    const std::string model = (dir / "model" / "tokenizer.model").string();
    std::printf("corpus: %.1f MB (%s repeated); bpe model: %d pieces, trained in %.1f s\n", mb,
                fs::path(source).filename().c_str(), tr.vocab_size, tr.train_seconds);
    // -- prepare encoding
    double cpu_prepare = 0, cpu_spm = 0;  // CPU seconds of the last run of each
    auto prepare_run = [&](int th, const char* name) {
      double c0 = cpu_seconds(RUSAGE_SELF);
      td::PrepareOptions o;
      o.inputs = {corpus.string()};
      o.out_dir = (dir / name).string();
      o.tokenizer = "bpe";
      o.tokenizer_model = model;
      o.threads = th;
      o.quiet = true;
      td::PrepareResult r = td::prepare_dataset(o);
      cpu_prepare = cpu_seconds(RUSAGE_SELF) - c0;
      fs::remove_all(o.out_dir);
      return r;
    };
    const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    // -- spm_encode
    std::string arg_model = "--model=" + model, arg_fmt = "--output_format=id";
    char* sargv[] = {const_cast<char*>("spm_encode"), arg_model.data(), arg_fmt.data(), nullptr};
    auto spm_run = [&]() {
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 0, corpus.c_str(), O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      auto t0 = std::chrono::steady_clock::now();
      double c0 = cpu_seconds(RUSAGE_CHILDREN);
      pid_t pid;
      if (posix_spawnp(&pid, "spm_encode", &fa, nullptr, sargv, environ) != 0)
        td::fail("spm_encode not found: apt-get install sentencepiece");
      int status = 0;
      waitpid(pid, &status, 0);
      posix_spawn_file_actions_destroy(&fa);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) td::fail("spm_encode failed");
      cpu_spm = cpu_seconds(RUSAGE_CHILDREN) - c0;
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    std::printf("load average %.2f on %u cores; best of %d rounds\n", load[0],
                std::thread::hardware_concurrency(), rounds);
    double spm_s = 1e30, p1_s = 1e30, pn_s = 1e30;
    for (int r = 0; r < rounds; ++r) {
      spm_s = std::min(spm_s, spm_run());
      pn_s = std::min(pn_s, prepare_run(nthreads, "dsn").encode_seconds);
      if (nthreads > 1) p1_s = std::min(p1_s, prepare_run(1, "ds1").encode_seconds);
      else p1_s = pn_s;
    }
    fs::remove_all(dir);
    const double spm = mb / spm_s, pn = mb / pn_s;
    std::printf("spm_encode (1 thread):          %7.2f MB/s  (%.2f s)\n", spm, spm_s);
    if (nthreads > 1)
      std::printf("prepare encode, 1 thread:       %7.2f MB/s  (%.2f s)  %.2fx spm_encode\n", mb / p1_s, p1_s,
                  mb / p1_s / spm);
    std::printf("prepare encode, %d threads:      %7.2f MB/s  (%.2f s)  %.2fx spm_encode\n", nthreads, pn, pn_s,
                pn / spm);
    // On a shared machine the wall-clock ratio shows the cores this run got, not what the code
    // does with free cores; CPU time per MB is not skewed by other load.
    std::printf("CPU time per MB: spm_encode %.3f s, prepare (1 thread) %.3f s: per-core speed %.2fx spm_encode\n",
                cpu_spm / mb, cpu_prepare / mb, cpu_spm / cpu_prepare);
    if (mb > 1.5 * seed.size() / 1e6)
      std::printf("note: the corpus repeats %.1f MB of text, so after the first copy nearly every word hits "
                  "prepare's word cache; `bench_prepare %.1f` measures one unrepeated copy\n",
                  seed.size() / 1e6, seed.size() / 1e6);
    std::printf("ratio (prepare %d threads / spm_encode): %.2fx  (target >= 1.5x on 2 cores)\n", nthreads, pn / spm);
  } catch (const td::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
