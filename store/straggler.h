// The straggler of a data-parallel run: the rank the others wait for.
//
// In synchronous data parallelism every rank waits in the step's collectives (the gradient
// all-reduce) for the slowest one, so the ranks' step times are nearly equal and say little;
// what differs is each rank's compute time, the step's wall time outside collectives
// (ranks[].compute_ms = step_ms - comm_ms, stored as rank_compute_ms; docs/events.md). The
// straggler is the rank whose compute time is the largest.
//
// Definition (over a window of the run's last steps that every rank has a value for):
//  * each rank's figure is the median of its compute_ms over the window (one slow step, a
//    checkpoint or a page fault, does not make a straggler);
//  * the slowest rank is the one with the largest median (ties: the lowest rank);
//  * "slower by" compares it with the median of the OTHER ranks' medians (for 2 ranks: the
//    other rank; an even count takes the mean of the two middle values):
//    slower_pct = 100 * (its median / the others' median - 1);
//  * slowest_steps counts the window's steps in which it had the largest compute_ms itself.
// No Qt; the Run page (gui/app/run_view.cpp) runs run_straggler() on the store thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/types.h"

namespace td::store {

class Store;

struct Straggler {
  int rank = -1;                 // the slowest rank
  std::string host;              // its host (run_start's hosts); "" when unknown
  int world_size = 0;            // ranks compared
  int steps = 0;                 // steps of the window (each has every rank's figure)
  int slowest_steps = 0;         // of them, steps in which this rank's compute_ms was the largest
  double median_ms = 0;          // its median compute_ms over the window, ms
  double others_median_ms = 0;   // the median of the other ranks' medians, ms
  double slower_pct = 0;         // 100 * (median_ms / others_median_ms - 1); 0 when others_median_ms is 0
};

/// The straggler among `per_rank` (index = rank: that rank's compute_ms series, any steps, by
/// step as Store::metric_series returns them) over the last `window` steps (>= 1) that every
/// rank has. Nothing for fewer than 2 ranks or when no step has every rank's value.
std::optional<Straggler> find_straggler(const std::vector<MetricSeries>& per_rank, int window);

/// find_straggler over the run's stored rank_compute_ms rows of its last `window` steps, with
/// the slowest rank's host from the run's hosts. Nothing for an unknown run, a run of
/// world_size <= 1, or one without rank_compute_ms rows (written before the field). Cost: one
/// index range read of at most `window` rows per rank. Throws td::Error on a store error.
std::optional<Straggler> run_straggler(Store& store, const std::string& run_id, int window = 100);

}  // namespace td::store
