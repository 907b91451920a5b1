// The CPU's peak for MFU: the measured sgemm throughput of this machine.
//
// MFU = achieved model FLOP/s / peak FLOP/s (Chowdhery et al. 2022, PaLM, appendix B). On the
// CPU the peak is what OpenBLAS sgemm reaches on large square matrices with the run's thread
// count, measured by `traindeck-engine calibrate` and cached in
// $XDG_CACHE_HOME/traindeck/calibration.json (default ~/.cache) keyed by CPU model and threads.
// Beside the peak the cache keeps the engine's measured share of it: the MFU the engine's own
// training step reaches on this CPU, which the planner assumes for a config before any run.
#pragma once

#include <optional>
#include <string>

namespace td {

/// Measures sgemm FLOP/s with `threads` threads (about `seconds` of work; the best of several
/// repetitions of an n x n x n product). Returns FLOP/s.
double measure_sgemm_flops(int threads, double seconds = 1.0, int n = 1024);

/// The cached peak for this CPU model and thread count, if calibrated before.
std::optional<double> cached_peak_flops(int threads);
/// Stores a peak in the cache unless a higher one is there already (load on the machine only
/// lowers a measurement). Errors writing the cache are ignored: it is only a cache.
void store_peak_flops(int threads, double flops);
/// The engine's share of the sgemm peak on this CPU: model FLOP/s of training steps (forward,
/// backward, AdamW update; FLOPs per token as td::make_plan counts them, 6 N + 12 L C T) of the
/// reference model kEngineMfuReference at `threads` threads, divided by `peak_flops` (FLOP/s, the
/// calibrated peak). About `seconds` of steps after one warm-up step. Returns the share (an MFU,
/// typically 0.1-0.6); throws td::Error when peak_flops is not positive.
double measure_engine_mfu(int threads, double peak_flops, double seconds = 2.0);
/// The reference shape measure_engine_mfu times: the demo experiment's model and batch
/// (resources/configs/demo.json: 4 layers, d_model 192, 6 heads, seq_len 128, micro_batch 16,
/// the byte tokenizer's 257 ids).
struct EngineMfuReference {
  static constexpr int n_layer = 4, d_model = 192, n_head = 6, seq_len = 128, micro_batch = 16, vocab_size = 257;
};

/// The cached engine share (measure_engine_mfu) for this CPU model and thread count, if
/// calibrated before; always in (0, 1].
std::optional<double> cached_engine_mfu(int threads);
/// Stores an engine share unless a higher one is there already (as store_peak_flops). Values
/// outside (0, 1] are not stored. Errors writing the cache are ignored.
void store_engine_mfu(int threads, double mfu);
/// Path of the cache file.
std::string calibration_cache_path();

}  // namespace td
