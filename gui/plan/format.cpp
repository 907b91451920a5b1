#include "gui/plan/format.h"

#include <QCoreApplication>

#include <cmath>

namespace td::gui {

QString formatCount(uint64_t n) {
  QString digits = QString::number(n);
  QString out;
  const int len = digits.size();
  for (int i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out += QLatin1Char(',');
    out += digits[i];
  }
  return out;
}

QString formatSi(double v) {
  if (!std::isfinite(v)) return QStringLiteral("?");
  static const char* const units[] = {"", " k", " M", " G", " T", " P", " E"};
  int u = 0;
  double a = std::fabs(v);
  while (a >= 1000.0 && u < 6) {
    a /= 1000.0;
    v /= 1000.0;
    ++u;
  }
  if (u == 0) return QString::number(v, 'g', 4);
  // Three significant digits: 1.50 G, 12.3 k, 124.4 M keeps one decimal above 100.
  const int decimals = a >= 100 ? 1 : a >= 10 ? 1 : 2;
  return QString::number(v, 'f', decimals) + QLatin1String(units[u]);
}

QString formatBytes(uint64_t bytes) {
  const double b = (double)bytes;
  if (bytes >= (1ull << 30)) return QString::number(b / double(1ull << 30), 'f', 2) + QStringLiteral(" GiB");
  if (bytes >= (1ull << 20)) return QString::number(b / double(1ull << 20), 'f', 1) + QStringLiteral(" MiB");
  if (bytes >= (1ull << 10)) return QString::number(b / double(1ull << 10), 'f', 1) + QStringLiteral(" KiB");
  return QString::number(bytes) + QStringLiteral(" B");
}

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("?");
  auto tr = [](const char* s) { return QCoreApplication::translate("td::gui", s); };
  if (seconds == 0) return tr("0 s");
  if (seconds < 1) {
    // Below a second: the unit that keeps three significant digits (35.4 ms, 812 µs, 4.17 ns).
    static const char* const units[] = {"%1 ms", "%1 µs", "%1 ns"};
    double v = seconds * 1e3;
    int u = 0;
    while (v < 1 && u < 2) {
      v *= 1e3;
      ++u;
    }
    // 999.7 would print as "1000": the next unit up.
    if (v >= 999.5) {
      if (u == 0) return tr("%1 s").arg(1.0, 0, 'f', 1);
      v /= 1e3;
      --u;
    }
    const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    return tr(units[u]).arg(v, 0, 'f', decimals);
  }
  if (seconds < 9.95) return tr("%1 s").arg(seconds, 0, 'f', 1);
  const uint64_t s = (uint64_t)std::llround(seconds);
  if (s < 60) return tr("%1 s").arg(s);
  if (s < 3600) return tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  if (s < 86400) return tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
  return tr("%1 d %2 h").arg(s / 86400).arg((s % 86400) / 3600);
}

}  // namespace td::gui
