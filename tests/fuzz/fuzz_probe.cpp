// Fuzz target: a node's probe output (td::remote::parse_probe_output, remote/probe.h), then the
// report text made from it (format_report).
#include "fuzz_common.h"
#include "remote/probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const td::remote::NodeReport r = td::remote::parse_probe_output(std::string(tdfuzz::text(data, size)));
    (void)td::remote::format_report(r);
  } catch (const td::Error&) {
  }
  return 0;
}
