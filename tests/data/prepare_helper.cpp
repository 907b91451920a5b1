// td_prepare_helper: runs prepare_dataset() in its own process, for tests that measure the
// process (peak RSS) while the engine CLI is built elsewhere. Prints one JSON line on stdout:
//   {"train_tokens":..,"val_tokens":..,"vocab_size":..,"encode_seconds":..,"vm_hwm_kb":..}
// usage: td_prepare_helper --out DIR [--tokenizer byte|bpe] [--vocab-size N] [--val-fraction F]
//          [--sample-bytes N] [--threads N] [--model PATH] [--quiet] INPUT...
// Exit code 1 with the error on stderr when prepare throws td::Error.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/common/error.h"
#include "engine/data/prepare.h"

static long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

int main(int argc, char** argv) {
  td::PrepareOptions opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--out") opt.out_dir = val();
    else if (a == "--tokenizer") opt.tokenizer = val();
    else if (a == "--vocab-size") opt.vocab_size = std::stoi(val());
    else if (a == "--val-fraction") opt.val_fraction = std::stod(val());
    else if (a == "--sample-bytes") opt.bpe_sample_bytes = std::stoull(val());
    else if (a == "--threads") opt.threads = std::stoi(val());
    else if (a == "--model") opt.tokenizer_model = val();
    else if (a == "--quiet") opt.quiet = true;
    else opt.inputs.push_back(a);
  }
  try {
    td::PrepareResult r = td::prepare_dataset(opt);
    std::printf("{\"train_tokens\":%llu,\"val_tokens\":%llu,\"vocab_size\":%d,\"bytes_read\":%llu,"
                "\"train_seconds\":%.3f,\"encode_seconds\":%.3f,\"vm_hwm_kb\":%ld}\n",
                (unsigned long long)r.train_tokens, (unsigned long long)r.val_tokens, r.vocab_size,
                (unsigned long long)r.bytes_read, r.train_seconds, r.encode_seconds, vm_hwm_kb());
  } catch (const td::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
