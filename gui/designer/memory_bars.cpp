#include "gui/designer/memory_bars.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

#include "gui/plan/format.h"

namespace td::gui {

namespace {
// Part colours (Okabe-Ito: distinguishable with colour-blindness), in drawing order.
const QColor kColours[4] = {QColor(0x00, 0x72, 0xB2), QColor(0xE6, 0x9F, 0x00), QColor(0x00, 0x9E, 0x73),
                            QColor(0xCC, 0x79, 0xA7)};
constexpr int kBarHeight = 16, kGap = 6, kLegend = 18, kLabelWidth = 56;
}  // namespace

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void MemoryBars::setBars(const std::array<MemoryBar, 4>& bars, uint64_t limit_bytes, const QString& limit_label,
                         int highlight) {
  bars_ = bars;
  limit_ = limit_bytes;
  limit_label_ = limit_label;
  highlight_ = highlight;
  has_bars_ = true;
  QStringList tip;
  for (const auto& b : bars_)
    tip << tr("%1: %2 (parameters %3, gradients %4, optimizer %5, activations %6)")
               .arg(b.label, formatBytes(b.total()), formatBytes(b.params), formatBytes(b.grads), formatBytes(b.optimizer),
                    formatBytes(b.activations));
  if (limit_ > 0) tip << tr("Device memory: %1").arg(formatBytes(limit_));
  setToolTip(tip.join('\n'));
  update();
}

void MemoryBars::clear() {
  has_bars_ = false;
  setToolTip(QString());
  update();
}

QSize MemoryBars::sizeHint() const { return {360, kLegend + 4 * (kBarHeight + kGap) + kLegend}; }
QSize MemoryBars::minimumSizeHint() const { return {200, sizeHint().height()}; }

void MemoryBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  const QPalette& pal = palette();
  const QString names[4] = {tr("parameters"), tr("gradients"), tr("optimizer"), tr("activations")};
  // Legend.
  int x = 0;
  const QFontMetrics fm(font());
  for (int i = 0; i < 4; ++i) {
    p.fillRect(QRect(x, 4, 10, 10), kColours[i]);
    x += 14;
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QPoint(x, 4 + fm.ascent() - 1), names[i]);
    x += fm.horizontalAdvance(names[i]) + 12;
  }
  if (!has_bars_) return;
  uint64_t scale = limit_;
  for (const auto& b : bars_) scale = std::max(scale, b.total());
  if (scale == 0) return;
  const int left = kLabelWidth, width = std::max(10, this->width() - left - 4);
  auto px = [&](uint64_t bytes) { return int(double(bytes) / double(scale) * width + 0.5); };
  for (int i = 0; i < 4; ++i) {
    const MemoryBar& b = bars_[i];
    const int y = kLegend + i * (kBarHeight + kGap);
    QFont f = font();
    f.setBold(i == highlight_);
    p.setFont(f);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(0, y, left - 4, kBarHeight), Qt::AlignLeft | Qt::AlignVCenter, b.label);
    const uint64_t parts[4] = {b.params, b.grads, b.optimizer, b.activations};
    uint64_t acc = 0;
    for (int k = 0; k < 4; ++k) {
      const int x0 = left + px(acc);
      acc += parts[k];
      const int x1 = left + px(acc);
      if (x1 > x0) p.fillRect(QRect(x0, y, x1 - x0, kBarHeight), kColours[k]);
    }
    if (limit_ > 0 && b.total() > limit_) {
      p.setPen(QPen(QColor(0xd0, 0x02, 0x1b), 2));
      p.drawRect(QRect(left, y, px(b.total()), kBarHeight));
    }
  }
  p.setFont(font());
  if (limit_ > 0) {
    const int lx = left + px(limit_);
    const int top = kLegend - 2, bottom = kLegend + 4 * (kBarHeight + kGap) - kGap + 2;
    p.setPen(QPen(QColor(0xd0, 0x02, 0x1b), 2, Qt::DashLine));
    p.drawLine(lx, top, lx, bottom);
    p.setPen(pal.color(QPalette::WindowText));
    const int tw = fm.horizontalAdvance(limit_label_);
    p.drawText(QPoint(std::max(left, std::min(lx - tw / 2, this->width() - tw - 2)), bottom + fm.ascent() + 2), limit_label_);
  }
}

}  // namespace td::gui
