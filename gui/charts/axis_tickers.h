// Axis tick labels of the charts (ChartView): binary byte units for memory and network, the
// counting suffixes of the field (10k, 1.5M, 2B) for steps, tokens and plain values. Internal to
// gui/charts (includes qcustomplot.h).
#pragma once

#include <QLocale>
#include <QString>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace td::gui {

// Tick labels in binary byte units: the unit follows each tick's magnitude (1024-based, as
// memory is counted), one decimal below 100 of the unit.
class BytesTicker : public QCPAxisTicker {
 public:
  explicit BytesTicker(bool per_second) : per_second_(per_second) {}

 protected:
  // Steps of 1, 2 or 5 (x 10^k) of the binary unit that fits: ticks land on 1 MiB, 2 MiB, ...
  double getTickStep(const QCPRange& range) override {
    const double raw = range.size() / static_cast<double>(std::max(1, tickCount()));
    if (!(raw > 0)) return 1;
    double unit = 1;
    while (raw >= unit * 1024.0 && unit < 1125899906842624.0) unit *= 1024.0;
    const double m = raw / unit;  // [~0, 1024)
    const double decade = std::pow(10.0, std::floor(std::log10(m)));
    double nice = 10 * decade;
    for (double f : {1.0, 2.0, 5.0})
      if (f * decade >= m) {
        nice = f * decade;
        break;
      }
    return std::max(1.0, nice * unit);
  }

  QString getTickLabel(double tick, const QLocale& locale, QChar, int) override {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = tick;
    int u = 0;
    while (std::abs(v) >= 1024.0 && u < 5) {
      v /= 1024.0;
      ++u;
    }
    const QString number = locale.toString(v, 'f', std::abs(v) < 100 && u > 0 ? 1 : 0);
    return number + QLatin1Char(' ') + QLatin1String(units[u]) + (per_second_ ? QStringLiteral("/s") : QString());
  }

 private:
  bool per_second_;
};

// Plain tick labels with the counting suffixes of the field (10k steps, 1.5M tokens, 300B
// tokens): k, M, B, T from 10,000 up; below that QCustomPlot's own label (format and
// precision of the axis).
class CountTicker : public QCPAxisTicker {
 public:
  /// `whole`: ticks only on whole numbers (steps, tokens): a range of a few steps gets ticks
  /// 1 apart, not 0.2 apart printed as "0 0 0 1 1".
  explicit CountTicker(bool whole = false) : whole_(whole) {}

 protected:
  double getTickStep(const QCPRange& range) override {
    const double step = QCPAxisTicker::getTickStep(range);
    return whole_ ? std::max(1.0, step) : step;
  }
  QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
    static const char* suffix[] = {"", "k", "M", "B", "T"};
    double v = tick;
    int u = 0;
    if (std::abs(v) < 1e4) return QCPAxisTicker::getTickLabel(tick, locale, format, precision);
    while (std::abs(v) >= 1000.0 && u < 4) {
      v /= 1000.0;
      ++u;
    }
    // Enough digits that neighbouring ticks differ (11.25k beside 11.5k), no trailing zeros.
    return locale.toString(v, 'g', std::clamp(precision, 3, 6)) + QLatin1String(suffix[u]);
  }

 private:
  bool whole_;
};

}  // namespace td::gui
