// Memory per device for ZeRO stages 0-3 as horizontal stacked bars (parameters, gradients,
// optimizer states, activations) with the device's memory as a limit line. Plain QWidget
// painting: four bars need no chart library.
#pragma once

#include <QString>
#include <QWidget>

#include <array>
#include <cstdint>

namespace td::gui {

/// One bar: bytes of each part on one device.
struct MemoryBar {
  QString label;  // "ZeRO-0"
  uint64_t params = 0, grads = 0, optimizer = 0, activations = 0;
  uint64_t total() const { return params + grads + optimizer + activations; }
};

/// Draws up to four MemoryBars against a limit (bytes). The bars share one scale: the largest of
/// the totals and the limit spans the width. A bar over the limit is outlined in red. GUI thread.
class MemoryBars : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryBars(QWidget* parent = nullptr);

  /// Replaces the bars and the limit (0: no limit line) and repaints. `highlight` is the index of
  /// the bar drawn in bold (the chosen ZeRO stage; -1 none).
  void setBars(const std::array<MemoryBar, 4>& bars, uint64_t limit_bytes, const QString& limit_label, int highlight);
  /// Clears the bars (no plan).
  void clear();
  const std::array<MemoryBar, 4>& bars() const { return bars_; }
  uint64_t limitBytes() const { return limit_; }
  bool hasBars() const { return has_bars_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::array<MemoryBar, 4> bars_{};
  uint64_t limit_ = 0;
  QString limit_label_;
  int highlight_ = -1;
  bool has_bars_ = false;
};

}  // namespace td::gui
