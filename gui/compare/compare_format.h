// Numbers of the compare view formatted for people (Qt Core only; pure functions, any thread).
#pragma once

#include <QString>

namespace td::gui::compare_format {

/// A loss in nats/token with 4 decimals: 2.75 -> "2.7500".
QString loss(double nats);
/// A count for people: below 10,000 as a whole number ("6144"), then with a suffix and three
/// significant digits: 12,345 -> "12.3k", 124,439,808 -> "124M", 2.5e9 -> "2.50B".
QString count(double n);
/// A fraction 0..1 as a percentage with one decimal: 0.42 -> "42.0%".
QString percent(double fraction);
/// Seconds as a duration: 12.5 -> "12.5 s", 75 -> "1 min 15 s", 3720 -> "1 h 02 min",
/// 93600 -> "1 d 02 h".
QString duration(double seconds);
/// The text for a missing number.
QString missing();

}  // namespace td::gui::compare_format
