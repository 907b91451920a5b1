// The CPU's peak for MFU: the measured sgemm throughput of this machine.
//
// MFU = achieved model FLOP/s / peak FLOP/s (Chowdhery et al. 2022, PaLM, appendix B). On the
// CPU the peak is what OpenBLAS sgemm reaches on large square matrices with the run's thread
// count, measured by `traindeck-engine calibrate` and cached in
// $XDG_CACHE_HOME/traindeck/calibration.json (default ~/.cache) keyed by CPU model and threads.
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
/// Path of the cache file.
std::string calibration_cache_path();

}  // namespace td
