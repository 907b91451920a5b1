// Human formats of the compare view (compare_format.h).
#include "gui/compare/compare_format.h"

#include <QCoreApplication>

#include <cmath>

namespace td::gui::compare_format {

QString loss(double nats) { return QString::number(nats, 'f', 4); }

QString count(double n) {
  const double a = std::fabs(n);
  if (a < 1e4) return QString::number(std::llround(n));
  struct Unit {
    double scale;
    const char* suffix;
  };
  static const Unit units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
  for (const Unit& u : units)
    if (a >= u.scale) {
      const double v = n / u.scale;
      const int decimals = std::fabs(v) >= 100 ? 0 : std::fabs(v) >= 10 ? 1 : 2;
      return QString::number(v, 'f', decimals) + QLatin1String(u.suffix);
    }
  return QString::number(n);
}

QString percent(double fraction) { return QString::number(fraction * 100.0, 'f', 1) + QLatin1Char('%'); }

QString duration(double seconds) {
  auto tr = [](const char* s) { return QCoreApplication::translate("td::gui::compare_format", s); };
  if (seconds < 60) return tr("%1 s").arg(QString::number(seconds, 'f', 1));
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 3600) return tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  if (s < 86400) return tr("%1 h %2 min").arg(s / 3600).arg(s % 3600 / 60, 2, 10, QLatin1Char('0'));
  return tr("%1 d %2 h").arg(s / 86400).arg(s % 86400 / 3600, 2, 10, QLatin1Char('0'));
}

QString missing() { return QStringLiteral("\u2014"); }

}  // namespace td::gui::compare_format
