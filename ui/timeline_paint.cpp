// TimelineView painting. The rows are reduced to one kind per pixel column (TimelineIndex) and written as
// pixels into an image (or as one rect per run of equal columns for vector output); everything drawn on
// top (labels, axis, step lane, selection) is cheap and repainted each frame.
#include "timeline_view.h"

#include <QPaintEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <algorithm>
#include <cmath>
#include <cstring>

namespace prism::ui {

struct TimelineView::Frame {
    QSize size;
    QRect axis, lane, plot, legend;
    std::int64_t t0 = 0, t1 = 1;
    double nsPerPx = 1;
    int scrollY = 0;
    std::size_t firstRow = 0, lastRow = 0; // visible rows [first, last)
    int fontH = 12;
};

namespace {

QRgb opaque(const QColor& c) { return c.rgba() | 0xFF000000u; }

int gapTop(int h) { return h >= 10 ? 2 : h >= 5 ? 1 : 0; }
int gapBottom(int h) { return h >= 10 ? 1 : 0; }

} // namespace

TimelineView::Frame TimelineView::frame(const QSize& size) const {
    Frame f;
    f.size = size;
    QFontMetrics fm(font());
    f.fontH = fm.height();
    const int axisH = f.fontH + 10, laneH = f.fontH + 8, legendH = f.fontH + 8;
    f.axis = QRect(0, 0, size.width(), axisH);
    f.lane = QRect(0, axisH, size.width(), laneH);
    f.legend = QRect(0, size.height() - legendH, size.width(), legendH);
    const int top = axisH + laneH;
    f.plot =
        QRect(m_labelWidth, top, std::max(1, size.width() - m_labelWidth), std::max(1, size.height() - top - legendH));
    f.t0 = rangeStart();
    f.t1 = std::max(rangeEnd(), f.t0 + 1);
    f.nsPerPx = double(f.t1 - f.t0) / double(f.plot.width());
    f.scrollY = std::clamp(m_scrollY, 0, std::max(0, m_contentHeight - f.plot.height()));
    auto first =
        std::upper_bound(m_rows.begin(), m_rows.end(), f.scrollY, [](int v, const Row& r) { return v < r.y + r.h; });
    auto last =
        std::lower_bound(first, m_rows.end(), f.scrollY + f.plot.height(), [](const Row& r, int v) { return r.y < v; });
    f.firstRow = std::size_t(first - m_rows.begin());
    f.lastRow = std::size_t(last - m_rows.begin());
    return f;
}

QRect TimelineView::plotRect() const {
    QRect r = frame(size()).plot;
    r.setWidth(std::max(1, r.width() - m_vbar->sizeHint().width()));
    return r;
}

QRect TimelineView::stepLaneRect() const { return frame(size()).lane; }
QRect TimelineView::axisRect() const { return frame(size()).axis; }

void TimelineView::stepColumns(const Frame& f, std::vector<int>& out) const {
    // `out` already has one entry per column; the frame's nsPerPx is per entry.
    std::fill(out.begin(), out.end(), -1);
    if (!m_data) return;
    const auto& st = m_data->steps();
    if (st.empty()) return;
    const int w = int(out.size());
    std::int64_t tFirst = f.t0 + std::int64_t(0.5 * f.nsPerPx);
    std::size_t i = std::size_t(
        std::upper_bound(st.begin(), st.end(), tFirst, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; }) -
        st.begin());
    for (int x = 0; x < w; ++x) {
        const std::int64_t t = f.t0 + std::int64_t((x + 0.5) * f.nsPerPx);
        while (i < st.size() && st[i].endNs <= t) ++i;
        if (i >= st.size()) break;
        out[std::size_t(x)] = t >= st[i].startNs ? int(i) : -1;
    }
}

// ---- rows -----------------------------------------------------------------------------------------------

void TimelineView::paintRowsImage(QImage& img, const Frame& f) const {
    const qreal dpr = img.devicePixelRatio();
    const int W = img.width(), H = img.height();
    Frame df = f;
    df.nsPerPx = f.nsPerPx / dpr;
    const QRgb background = opaque(m_colors.background);
    const QRgb header = opaque(m_colors.header);
    // Colour of every column value (kind, kind | edge); kEmpty shows the step band instead.
    QRgb lut[256];
    std::fill(lut, lut + 256, background);
    for (int k = 0; k < 6; ++k) {
        lut[k] = opaque(m_colors.kind[k]);
        lut[k | TimelineIndex::kEdge] =
            opaque(m_colors.dark ? m_colors.kind[k].darker(160) : m_colors.kind[k].darker(135));
    }
    std::vector<int> stepOf(static_cast<std::size_t>(W));
    stepColumns(df, stepOf);
    std::vector<QRgb> band(static_cast<std::size_t>(W));
    const auto& st = m_data ? m_data->steps() : std::vector<StepInfo>{};
    for (int x = 0; x < W; ++x) {
        int s = stepOf[std::size_t(x)];
        band[std::size_t(x)] = s < 0  ? background
            : st[std::size_t(s)].slow ? opaque(m_colors.slowBand)
            : (s & 1)                 ? opaque(m_colors.bandB)
                                      : opaque(m_colors.bandA);
    }
    std::vector<std::uint8_t> kinds(static_cast<std::size_t>(W));
    std::vector<std::uint16_t> votes;
    std::vector<QRgb> headerLine(static_cast<std::size_t>(W), header);

    auto toLine = [&](const std::uint8_t* k, QRgb* dst) {
        for (int x = 0; x < W; ++x) {
            const std::uint8_t v = k[x];
            dst[x] = v == TimelineIndex::kEmpty ? band[std::size_t(x)] : lut[v];
        }
    };
    auto copyLines = [&](int y0, int y1, const QRgb* src) {
        y0 = std::max(y0, 0);
        y1 = std::min(y1, H);
        for (int y = y0; y < y1; ++y) std::memcpy(img.scanLine(y), src, std::size_t(W) * sizeof(QRgb));
    };
    // A bar: the first scanline is written straight from the kinds, the others copy it.
    auto bar = [&](int y0, int y1, const std::uint8_t* k) {
        y0 = std::max(y0, 0);
        y1 = std::min(y1, H);
        if (y0 >= y1) return;
        QRgb* first = reinterpret_cast<QRgb*>(img.scanLine(y0));
        toLine(k, first);
        for (int y = y0 + 1; y < y1; ++y) std::memcpy(img.scanLine(y), first, std::size_t(W) * sizeof(QRgb));
    };

    int filled = 0; // scanlines written so far, top-down
    for (std::size_t i = f.firstRow; i < f.lastRow; ++i) {
        const Row& row = m_rows[i];
        const int y0 = int(std::lround((row.y - f.scrollY) * dpr));
        const int y1 = int(std::lround((row.y + row.h - f.scrollY) * dpr));
        const int g0 = int(std::lround(gapTop(row.h) * dpr)), g1 = int(std::lround(gapBottom(row.h) * dpr));
        if (row.type == Row::Rank) {
            m_index->columns(std::size_t(row.first), df.t0, df.nsPerPx, W, kinds.data());
            copyLines(y0, y0 + g0, band.data());
            bar(y0 + g0, y1 - g1, kinds.data());
            copyLines(y1 - g1, y1, band.data());
        } else if (row.collapsed) {
            // A collapsed group shows the kind most of its ranks are in, column by column.
            votes.assign(std::size_t(W) * 6, 0);
            for (int r = row.first; r < row.last; ++r) {
                m_index->columns(std::size_t(r), df.t0, df.nsPerPx, W, kinds.data());
                for (int x = 0; x < W; ++x)
                    if (kinds[std::size_t(x)] != TimelineIndex::kEmpty)
                        ++votes[std::size_t(x) * 6 + (kinds[std::size_t(x)] & TimelineIndex::kKindMask)];
            }
            for (int x = 0; x < W; ++x) {
                const std::uint16_t* v = &votes[std::size_t(x) * 6];
                int best = -1;
                for (int k = 0; k < 6; ++k)
                    if (v[k] && (best < 0 || v[k] > v[best])) best = k;
                kinds[std::size_t(x)] = best < 0 ? TimelineIndex::kEmpty : std::uint8_t(best);
            }
            copyLines(y0, y0 + g0, headerLine.data());
            bar(y0 + g0, y1 - g1, kinds.data());
            copyLines(y1 - g1, y1, headerLine.data());
        } else {
            copyLines(y0, y1, headerLine.data());
        }
        filled = std::max(filled, std::min(y1, H));
    }
    if (filled < H) {
        std::vector<QRgb> bg(static_cast<std::size_t>(W), background);
        copyLines(filled, H, bg.data());
    }
}

void TimelineView::paintRowsVector(QPainter& p, const Frame& f) const {
    const int W = f.plot.width();
    std::vector<int> stepOf(static_cast<std::size_t>(W));
    stepColumns(f, stepOf);
    const auto& st = m_data->steps();
    std::vector<QColor> band(static_cast<std::size_t>(W));
    for (int x = 0; x < W; ++x) {
        int s = stepOf[std::size_t(x)];
        band[std::size_t(x)] = s < 0  ? m_colors.background
            : st[std::size_t(s)].slow ? m_colors.slowBand
            : (s & 1)                 ? m_colors.bandB
                                      : m_colors.bandA;
    }
    p.fillRect(f.plot, m_colors.background);
    std::vector<std::uint8_t> kinds(static_cast<std::size_t>(W));
    std::vector<QColor> line(static_cast<std::size_t>(W));
    auto runs = [&](const std::vector<QColor>& colors, double y, double h) {
        if (h <= 0) return;
        for (int x = 0; x < W;) {
            int e = x + 1;
            while (e < W && colors[std::size_t(e)] == colors[std::size_t(x)]) ++e;
            if (colors[std::size_t(x)] != m_colors.background)
                p.fillRect(QRectF(f.plot.left() + x, y, e - x, h), colors[std::size_t(x)]);
            x = e;
        }
    };
    for (std::size_t i = f.firstRow; i < f.lastRow; ++i) {
        const Row& row = m_rows[i];
        const double y = f.plot.top() + row.y - f.scrollY;
        if (row.type != Row::Rank) {
            p.fillRect(QRectF(f.plot.left(), y, W, row.h), m_colors.header);
            continue;
        }
        m_index->columns(std::size_t(row.first), f.t0, f.nsPerPx, W, kinds.data());
        for (int x = 0; x < W; ++x) {
            std::uint8_t v = kinds[std::size_t(x)];
            line[std::size_t(x)] = v == TimelineIndex::kEmpty ? band[std::size_t(x)]
                : (v & TimelineIndex::kEdge)                  ? m_colors.kind[v & TimelineIndex::kKindMask].darker(135)
                                                              : m_colors.kind[v & TimelineIndex::kKindMask];
        }
        const int g0 = gapTop(row.h), g1 = gapBottom(row.h);
        runs(band, y, g0);
        runs(line, y + g0, row.h - g0 - g1);
        runs(band, y + row.h - g1, g1);
    }
}

void TimelineView::paintSegmentText(QPainter& p, const Frame& f) const {
    if (!m_data || m_rowHeight < 14) return;
    const JobTimeline& tl = m_data->timeline();
    const int minPx = 56;
    p.save();
    p.setClipRect(f.plot);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p.setFont(small);
    QFontMetrics fm(small);
    int drawn = 0;
    std::vector<Segment> scratch; // a packed rank's visible segments
    for (std::size_t i = f.firstRow; i < f.lastRow && drawn < 4000; ++i) {
        const Row& row = m_rows[i];
        if (row.type != Row::Rank) continue;
        const RankTimeline& rt = tl.ranks[std::size_t(row.first)];
        if (double(rt.maxSegmentNs) < f.nsPerPx * minPx) continue; // nothing this wide in the row
        const auto visible = rt.visibleSegments(f.t0, f.t1, scratch);
        const int y = f.plot.top() + row.y - f.scrollY + gapTop(row.h);
        const int h = row.h - gapTop(row.h) - gapBottom(row.h);
        for (std::size_t s = 0; s < visible.size() && drawn < 4000; ++s) {
            const Segment& seg = visible[s];
            const double x0 = std::max(double(f.plot.left()), f.plot.left() + double(seg.startNs - f.t0) / f.nsPerPx);
            const double x1 =
                std::min(double(f.plot.right() + 1), f.plot.left() + double(seg.endNs - f.t0) / f.nsPerPx);
            if (x1 - x0 < minPx) continue;
            QString text = QString::fromUtf8(segmentKindName(seg.kind));
            if (seg.peer < std::uint32_t(m_data->rankCount()) && seg.kind != SegmentKind::DpSync)
                text += (seg.kind == SegmentKind::PpRecv ? " ← " : " → ") + m_data->rankLabel(int(seg.peer));
            text += "  " + formatNs(seg.endNs - seg.startNs);
            const QRectF r(x0 + 4, y, x1 - x0 - 8, h);
            const QColor bg = m_colors.kind[int(seg.kind)];
            p.setPen(bg.lightness() > 140 ? QColor(0x1a, 0x1a, 0x1a) : QColor(0xf5, 0xf5, 0xf5));
            p.drawText(r, Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(text, Qt::ElideRight, int(r.width())));
            ++drawn;
        }
    }
    p.restore();
}

void TimelineView::paintStaticOverlays(QPainter& p, const Frame& f) const {
    if (!m_data) return;
    p.save();
    p.setClipRect(f.plot);
    const auto& st = m_data->steps();
    const double x0 = f.plot.left();
    auto xOf = [&](std::int64_t t) { return x0 + double(t - f.t0) / f.nsPerPx; };
    // Step boundaries, when steps are wide enough to tell apart.
    if (!st.empty() && double(m_data->medianStepNs()) / f.nsPerPx >= 8) {
        auto it =
            std::upper_bound(st.begin(), st.end(), f.t0, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; });
        QColor c = m_colors.text;
        c.setAlpha(m_colors.dark ? 70 : 55);
        p.setPen(QPen(c, 0));
        const int yTop = f.plot.top(), yBot = f.plot.top() + std::min(f.plot.height(), m_contentHeight - f.scrollY);
        for (; it != st.end() && it->startNs <= f.t1; ++it) {
            const double x = std::round(xOf(it->startNs)) + 0.5;
            p.drawLine(QPointF(x, yTop), QPointF(x, yBot));
        }
    }
    // Findings: outline the ranks and steps each one points at.
    p.setBrush(Qt::NoBrush);
    for (int fi = 0; fi < m_data->findingCount(); ++fi) {
        const FindingPlace& place = m_data->place(fi);
        const std::string& kind = m_data->info().findings[std::size_t(fi)].kind;
        if (place.ranks.empty() || place.endNs < f.t0 || place.startNs > f.t1) continue;
        p.setPen(
            QPen(m_colors.slow, kind == "slow_rank" ? 2 : 1.5, kind == "slow_rank" ? Qt::SolidLine : Qt::DashLine));
        const double a = std::max(xOf(place.startNs), x0 - 4),
                     b = std::min(xOf(place.endNs), double(f.plot.right() + 4));
        for (int r : place.ranks) {
            if (!isRankVisible(r)) continue;
            const Row& row = m_rows[std::size_t(m_rowOfRank[std::size_t(r)])];
            const double y = f.plot.top() + row.y - f.scrollY;
            if (y + row.h < f.plot.top() || y > f.plot.bottom()) continue;
            p.drawRect(QRectF(a + 1, y + 1, std::max(2.0, b - a - 2), row.h - 2));
        }
    }
    p.restore();
}

// ---- overlays -------------------------------------------------------------------------------------------

void TimelineView::paintSelection(QPainter& p, const Frame& f) const {
    if (!m_data) return;
    p.save();
    p.setClipRect(f.plot.adjusted(0, 0, 0, 0));
    const double x0 = f.plot.left();
    auto xOf = [&](std::int64_t t) { return x0 + double(t - f.t0) / f.nsPerPx; };
    auto rowRect = [&](int rank) -> QRectF {
        if (!isRankVisible(rank)) return {};
        const Row& row = m_rows[std::size_t(m_rowOfRank[std::size_t(rank)])];
        return QRectF(x0, f.plot.top() + row.y - f.scrollY, f.plot.width(), row.h);
    };
    const Selection sel = m_state ? m_state->selection() : Selection{};
    const auto& st = m_data->steps();
    if (sel.kind == Selection::Kind::Step && sel.step >= 0 && sel.step < int(st.size())) {
        const StepInfo& s = st[std::size_t(sel.step)];
        QRectF r(xOf(s.startNs), f.plot.top(), std::max(1.0, xOf(s.endNs) - xOf(s.startNs)), f.plot.height());
        p.fillRect(r, m_colors.highlight);
        p.setPen(QPen(m_colors.selection, 1.5));
        p.drawLine(QPointF(r.left(), r.top()), QPointF(r.left(), r.bottom()));
        p.drawLine(QPointF(r.right(), r.top()), QPointF(r.right(), r.bottom()));
    }
    if (m_state) {
        const auto ranks = m_state->highlightedRanks();
        p.setPen(QPen(m_colors.selection, 1.5));
        p.setBrush(Qt::NoBrush);
        for (int r : ranks) {
            QRectF rr = rowRect(r);
            if (rr.isEmpty()) continue;
            QColor c = m_colors.highlight;
            p.fillRect(rr, QColor(c.red(), c.green(), c.blue(), c.alpha() / 2));
            p.drawRect(rr.adjusted(0.75, 0.75, -0.75, -0.75));
        }
        if (sel.kind == Selection::Kind::Finding && sel.finding >= 0 && sel.finding < m_data->findingCount()) {
            const FindingPlace& place = m_data->place(sel.finding);
            QRectF r(xOf(place.startNs), f.plot.top(), xOf(place.endNs) - xOf(place.startNs), f.plot.height());
            p.setPen(QPen(m_colors.slow, 2, Qt::DashLine));
            p.drawRect(r);
        }
    }
    auto segRect = [&](int rank, int seg) -> QRectF {
        QRectF rr = rowRect(rank);
        if (rr.isEmpty() || seg < 0) return {};
        const RankTimeline& rt = m_data->timeline().ranks[std::size_t(rank)];
        if (std::size_t(seg) >= rt.segmentCount()) return {};
        const Segment s = rt.segment(std::size_t(seg));
        const int g0 = gapTop(int(rr.height())), g1 = gapBottom(int(rr.height()));
        const double a = xOf(s.startNs), b = std::max(xOf(s.endNs), a + 1);
        return QRectF(a, rr.top() + g0, b - a, rr.height() - g0 - g1);
    };
    if (sel.kind == Selection::Kind::Segment) {
        QRectF r = segRect(sel.rank, sel.segment);
        if (!r.isEmpty()) {
            p.setPen(QPen(m_colors.selection, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(-1, -1, 1, 1));
        }
    }
    if (m_hoverRank >= 0 && m_hoverSegment >= 0) {
        QRectF r = segRect(m_hoverRank, m_hoverSegment);
        if (!r.isEmpty()) {
            p.setPen(QPen(m_colors.hover, 1));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(-0.5, -0.5, 0.5, 0.5));
        }
    }
    if (m_drag == Drag::Range) {
        const int a = std::min(m_rangeX0, m_rangeX1), b = std::max(m_rangeX0, m_rangeX1);
        QColor c = m_colors.highlight;
        c.setAlpha(90);
        p.setClipping(false);
        p.fillRect(QRect(a, f.axis.top(), b - a, f.plot.bottom() - f.axis.top()), c);
        p.setPen(QPen(m_colors.selection, 1, Qt::DashLine));
        p.drawLine(a, f.axis.top(), a, f.plot.bottom());
        p.drawLine(b, f.axis.top(), b, f.plot.bottom());
        p.drawText(QRect(a, f.axis.top(), std::max(b - a, 200), f.axis.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   " " + formatNs(std::int64_t(double(b - a) * f.nsPerPx)));
    }
    p.restore();
}

void TimelineView::paintLabels(QPainter& p, const Frame& f) const {
    const QRect col(0, f.plot.top(), m_labelWidth, f.plot.height());
    p.fillRect(col, m_colors.header);
    if (!m_data) return;
    p.save();
    p.setClipRect(col);
    const auto highlighted = m_state ? m_state->highlightedRanks() : std::vector<int>{};
    QFont bold = font();
    bold.setBold(true);
    const int th = f.fontH;
    // Header labels first: in compact rows a header is too thin for its text, which then runs over the
    // group's ranks (their labels give way). Taken intervals of y, top-down.
    std::vector<std::pair<int, int>> taken;
    auto yOf = [&](const Row& r) { return f.plot.top() + r.y - f.scrollY; };
    for (std::size_t i = f.firstRow; i < f.lastRow; ++i) {
        const Row& row = m_rows[i];
        if (row.type == Row::Rank) continue;
        const int y = yOf(row);
        p.fillRect(QRect(0, y, m_labelWidth, row.h), m_colors.header.darker(m_colors.dark ? 80 : 106));
        p.fillRect(QRect(0, y + row.h - 1, m_labelWidth, 1), m_colors.grid);
    }
    for (std::size_t i = f.firstRow; i < f.lastRow; ++i) {
        const Row& row = m_rows[i];
        if (row.type == Row::Rank) continue;
        const int y = yOf(row);
        // The block of the header: a stage up to the next stage, a group up to the next header.
        std::size_t j = i + 1;
        while (j < m_rows.size() &&
               (m_rows[j].type == Row::Rank || (row.type == Row::Stage && m_rows[j].type == Row::Group)))
            ++j;
        const int blockEnd = j < m_rows.size() ? yOf(m_rows[j]) : f.plot.top() + m_contentHeight - f.scrollY;
        // Below the labels already placed (a stage label may sit over its first group's header).
        int ty = y;
        if (!taken.empty() && ty < taken.back().second) ty = taken.back().second;
        const int h = ty == y ? std::max(row.h, std::min(th, blockEnd - ty)) : std::min(th, blockEnd - ty);
        if (h < th - 2) continue;
        taken.emplace_back(ty, ty + h);
        const QString arrow = row.collapsed ? "▸ " : "▾ ";
        const QString text = row.type == Row::Stage
            ? tr("Stage %1 · %2 ranks").arg(row.stage).arg(row.last - row.first)
            : tr("DP group %1 · %2 ranks").arg(row.group).arg(row.last - row.first);
        if (h > row.h || ty != y)
            p.fillRect(QRect(0, ty, m_labelWidth - 4, h), m_colors.header.darker(m_colors.dark ? 80 : 106));
        p.setFont(row.type == Row::Stage ? bold : font());
        p.setPen(m_colors.headerText);
        p.drawText(QRect(row.type == Row::Stage ? 4 : 14, ty, m_labelWidth - 16, h), Qt::AlignVCenter | Qt::AlignLeft,
                   arrow + text);
    }
    auto free = [&](int a, int b) {
        auto it = std::lower_bound(taken.begin(), taken.end(), std::pair(b, INT32_MIN));
        if (it != taken.begin() && std::prev(it)->second > a) return false;
        return it == taken.end() || it->first >= b;
    };
    // Rank labels where they fit: the flagged ones (highlighted, stragglers, a finding's ranks) first, so that
    // in rows too thin for every label the outlined row is the one named, then the others in the space left.
    auto take = [&](int a, int b) {
        taken.insert(std::lower_bound(taken.begin(), taken.end(), std::pair(a, b)), std::pair(a, b));
    };
    for (const bool flaggedPass : {true, false})
        for (std::size_t i = f.firstRow; i < f.lastRow; ++i) {
            const Row& row = m_rows[i];
            if (row.type != Row::Rank) continue;
            const int y = yOf(row);
            const bool hl = std::binary_search(highlighted.begin(), highlighted.end(), row.first);
            const bool straggler = m_data->isStraggler(row.first);
            const bool named = straggler || !m_data->findingsOfRank(row.first).empty();
            if (flaggedPass != (hl || named)) continue;
            if (hl) p.fillRect(QRect(0, y, m_labelWidth, std::max(row.h, 2)), m_colors.highlight);
            if (straggler) p.fillRect(QRect(m_labelWidth - 4, y, 4, std::max(row.h, 1)), m_colors.slow);
            if (row.h < 6 && !hl && !named) continue;
            const int h = std::max(row.h, th);
            int ty = y + row.h / 2 - h / 2; // centred on the row; a flagged label may end or start with it
            if (!free(ty, ty + h) && flaggedPass) ty = free(y + row.h - h, y + row.h) ? y + row.h - h : y;
            if (!free(ty, ty + h)) continue;
            take(ty, ty + h);
            p.setFont(hl || named ? bold : font());
            p.setPen(straggler ? m_colors.slow : m_colors.headerText);
            QString text = m_data->rankLabel(row.first);
            if (straggler) text = "⚠ " + text;
            p.drawText(QRect(28, ty, m_labelWidth - 34, h), Qt::AlignVCenter | Qt::AlignLeft, text);
        }
    p.restore();
    p.fillRect(QRect(m_labelWidth - 1, f.plot.top(), 1, f.plot.height()), m_colors.grid);
}

void TimelineView::paintAxis(QPainter& p, const Frame& f) const {
    p.fillRect(f.axis, m_colors.header);
    p.fillRect(QRect(f.axis.left(), f.axis.bottom(), f.axis.width(), 1), m_colors.grid);
    if (!m_data) return;
    const TimeAxis axis = computeTimeAxis(f.t0, f.t1, f.plot.width(), jobStart(), m_absolute);
    p.save();
    p.setPen(m_colors.mutedText);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    p.setFont(small);
    p.drawText(QRect(6, f.axis.top(), m_labelWidth - 10, f.axis.height()), Qt::AlignVCenter | Qt::AlignLeft,
               QFontMetrics(small).elidedText(axis.caption, Qt::ElideRight, m_labelWidth - 10));
    p.setClipRect(QRect(f.plot.left(), f.axis.top(), f.plot.width(), f.axis.height() + f.lane.height()));
    const double x0 = f.plot.left();
    for (const AxisTick& t : axis.ticks) {
        const double x = std::round(x0 + double(t.t - f.t0) / f.nsPerPx) + 0.5;
        p.setPen(m_colors.mutedText);
        p.drawLine(QPointF(x, f.axis.bottom() - (t.major ? 7 : 3)), QPointF(x, f.axis.bottom()));
        if (t.major) {
            p.setPen(m_colors.headerText);
            p.drawText(QRectF(x + 3, f.axis.top(), 200, f.axis.height() - 4), Qt::AlignLeft | Qt::AlignVCenter,
                       t.label);
        }
    }
    p.restore();
}

void TimelineView::paintStepLane(QPainter& p, const Frame& f) const {
    p.fillRect(f.lane, m_colors.header);
    p.fillRect(QRect(f.lane.left(), f.lane.bottom(), f.lane.width(), 1), m_colors.grid);
    if (!m_data) return;
    const auto& st = m_data->steps();
    p.save();
    p.setPen(m_colors.headerText);
    p.drawText(QRect(6, f.lane.top(), m_labelWidth - 10, f.lane.height()), Qt::AlignVCenter | Qt::AlignLeft,
               st.empty() ? tr("Steps") : tr("Steps (%1)").arg(st.size()));
    const QRect lane(f.plot.left(), f.lane.top() + 2, f.plot.width(), f.lane.height() - 4);
    p.setClipRect(lane);
    if (st.empty()) {
        p.setPen(m_colors.mutedText);
        p.drawText(lane.adjusted(6, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, tr("no steps detected for this job"));
        p.restore();
        return;
    }
    const Selection sel = m_state ? m_state->selection() : Selection{};
    const int selStep = sel.kind == Selection::Kind::Step ? sel.step : -1;
    std::vector<int> stepOf(std::size_t(lane.width()));
    stepColumns(f, stepOf);
    const QColor a = m_colors.dark ? QColor(0x4a, 0x55, 0x66) : QColor(0xb4, 0xc3, 0xd8);
    const QColor b = m_colors.dark ? QColor(0x3a, 0x42, 0x4f) : QColor(0xd3, 0xdd, 0xea);
    auto colorOf = [&](int s) -> QColor {
        if (s < 0) return m_colors.header;
        if (s == selStep) return m_colors.dark ? QColor(0x5b, 0x95, 0xe8) : QColor(0x2f, 0x6f, 0xd0);
        if (st[std::size_t(s)].slow) return m_colors.slow;
        return (s & 1) ? b : a;
    };
    for (int x = 0; x < lane.width();) {
        int e = x + 1;
        const QColor c = colorOf(stepOf[std::size_t(x)]);
        while (e < lane.width() && colorOf(stepOf[std::size_t(e)]) == c) ++e;
        if (stepOf[std::size_t(x)] >= 0) p.fillRect(QRect(lane.left() + x, lane.top(), e - x, lane.height()), c);
        x = e;
    }
    // Labels on steps wide enough to hold one.
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p.setFont(small);
    QFontMetrics fm(small);
    const double minW = fm.horizontalAdvance("#000 00.0 ms") + 8;
    if (double(m_data->medianStepNs()) / f.nsPerPx >= minW * 0.5) {
        auto it =
            std::upper_bound(st.begin(), st.end(), f.t0, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; });
        for (; it != st.end() && it->startNs <= f.t1; ++it) {
            const double x0 = f.plot.left() + double(it->startNs - f.t0) / f.nsPerPx;
            const double x1 = f.plot.left() + double(it->endNs - f.t0) / f.nsPerPx;
            const double l = std::max(x0, double(lane.left())), r = std::min(x1, double(lane.right()));
            if (r - l < minW * 0.5) continue;
            const int pos = int(it - st.begin());
            const QColor bg = colorOf(pos);
            p.setPen(bg.lightness() > 140 ? QColor(0x1a, 0x1a, 0x1a) : QColor(0xf5, 0xf5, 0xf5));
            QString text = QString("#%1  %2").arg(it->index).arg(formatNs(it->durationNs()));
            if (r - l < fm.horizontalAdvance(text) + 8) text = QString("#%1").arg(it->index);
            p.drawText(QRectF(l + 4, lane.top(), r - l - 8, lane.height()), Qt::AlignVCenter | Qt::AlignLeft, text);
        }
    }
    p.restore();
}

void TimelineView::paintLegend(QPainter& p, const Frame& f) const {
    p.fillRect(f.legend, m_colors.header);
    p.fillRect(QRect(f.legend.left(), f.legend.top(), f.legend.width(), 1), m_colors.grid);
    p.save();
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    p.setFont(small);
    QFontMetrics fm(small);
    int x = 8;
    const int sq = fm.height() - 4;
    const int cy = f.legend.center().y();
    auto item = [&](const QColor& c, const QString& text, bool outline = false) {
        if (outline) {
            p.setPen(QPen(c, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRect(x + 1, cy - sq / 2 + 1, sq - 2, sq - 2));
        } else {
            p.fillRect(QRect(x, cy - sq / 2, sq, sq), c);
        }
        x += sq + 4;
        p.setPen(m_colors.headerText);
        p.drawText(QPoint(x, cy + fm.ascent() / 2 - 1), text);
        x += fm.horizontalAdvance(text) + 14;
    };
    for (SegmentKind k : {SegmentKind::Compute, SegmentKind::PpSend, SegmentKind::PpRecv, SegmentKind::DpSync,
                          SegmentKind::Wait, SegmentKind::Other})
        item(m_colors.kind[int(k)], QString::fromUtf8(segmentKindName(k)));
    item(m_colors.slowBand, tr("slow step"));
    item(m_colors.slow, tr("finding (straggler, slow link)"), true);
    if (!m_noteMarks.empty()) item(QColor(0xf0, 0xa2, 0x02), tr("note"));
    if (m_data) {
        // A hint on navigation, the longest that fits.
        p.setPen(m_colors.mutedText);
        for (const QString& hint : {tr("wheel zoom · drag pan · right-drag zoom to range · F fit · Backspace undo"),
                                    tr("wheel zoom · drag pan · F fit"), QString()}) {
            if (fm.horizontalAdvance(hint) > f.legend.width() - x - 8) continue;
            p.drawText(QRect(x, f.legend.top(), f.legend.width() - x - 8, f.legend.height()),
                       Qt::AlignVCenter | Qt::AlignRight, hint);
            break;
        }
    }
    p.restore();
}

void TimelineView::paintEmpty(QPainter& p, const QSize& size) const {
    p.fillRect(QRect(QPoint(0, 0), size), m_colors.background);
    p.setPen(m_colors.mutedText);
    const bool loaded = m_state && m_state->session();
    const bool noJobs = loaded && m_state->session()->report().jobs.empty();
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap,
               noJobs   ? tr("No training job found in this capture:\nno RoCE traffic between GPUs of different hosts.")
               : loaded ? tr("Pick a job in the job list.")
                        : tr("No capture loaded.\nOpen one with File ▸ Open, or drop it on this window."));
}

// ---- entry points ---------------------------------------------------------------------------------------

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    ++m_paintCount;
    if (!m_data) {
        paintEmpty(p, size());
        return;
    }
    Frame f = frame(size());
    f.plot.setWidth(plotRect().width());
    f.nsPerPx = double(f.t1 - f.t0) / double(f.plot.width());
    const qreal dpr = devicePixelRatioF();
    const QString key = QString("%1|%2|%3x%4|%5|%6|%7|%8")
                            .arg(f.t0)
                            .arg(f.t1)
                            .arg(f.plot.width())
                            .arg(f.plot.height())
                            .arg(f.scrollY)
                            .arg(m_layoutVersion)
                            .arg(m_colors.background.rgba())
                            .arg(dpr);
    if (key != m_cacheKey) {
        const QSize px(int(std::ceil(f.plot.width() * dpr)), int(std::ceil(f.plot.height() * dpr)));
        if (m_cache.size() != px) m_cache = QImage(px, QImage::Format_ARGB32_Premultiplied);
        m_cache.setDevicePixelRatio(dpr);
        paintRowsImage(m_cache, f);
        QPainter ip(&m_cache);
        ip.translate(-f.plot.topLeft());
        paintSegmentText(ip, f);
        paintStaticOverlays(ip, f);
        m_cacheKey = key;
        ++m_cacheBuilds;
    }
    p.drawImage(f.plot.topLeft(), m_cache);
    // The strip behind the scroll bar.
    p.fillRect(QRect(f.plot.right() + 1, f.plot.top(), width() - f.plot.right() - 1, f.plot.height()), m_colors.header);
    paintChrome(p, f);
    // Drawn last so the range being dragged shows over the axis too.
    if (m_drag == Drag::Range) paintSelection(p, f);
}

// What is drawn over the rows, the same on screen and in an export: selection, labels, axis, step lane
// with the note flags, legend.
void TimelineView::paintChrome(QPainter& p, const Frame& f) const {
    paintSelection(p, f);
    paintLabels(p, f);
    paintAxis(p, f);
    paintStepLane(p, f);
    paintNoteMarks(p, f);
    paintLegend(p, f);
}

void TimelineView::render(QPainter& p, const QSize& size, bool vector) const {
    if (!m_data) {
        paintEmpty(p, size);
        return;
    }
    const Frame f = frame(size);
    auto* target = dynamic_cast<QImage*>(p.device());
    const QTransform tr = p.worldTransform();
    if (vector) {
        paintRowsVector(p, f);
    } else if (target && tr.type() <= QTransform::TxTranslate && target->devicePixelRatio() == 1.0 &&
               (target->format() == QImage::Format_ARGB32_Premultiplied || target->format() == QImage::Format_RGB32) &&
               QRect(QPoint(0, 0), target->size()).contains(f.plot.translated(int(tr.dx()), int(tr.dy()))) &&
               tr.dx() == std::floor(tr.dx()) && tr.dy() == std::floor(tr.dy())) {
        // Painting into an image: write the rows straight into its pixels (no intermediate image to blit).
        const QRect r = f.plot.translated(int(tr.dx()), int(tr.dy()));
        QImage view(target->scanLine(r.top()) + r.left() * 4, r.width(), r.height(), target->bytesPerLine(),
                    target->format());
        paintRowsImage(view, f);
    } else {
        const qreal dpr = p.device() ? p.device()->devicePixelRatioF() : 1.0;
        QImage img(QSize(int(std::ceil(f.plot.width() * dpr)), int(std::ceil(f.plot.height() * dpr))),
                   QImage::Format_ARGB32_Premultiplied);
        img.setDevicePixelRatio(dpr);
        paintRowsImage(img, f);
        p.drawImage(f.plot.topLeft(), img);
    }
    paintSegmentText(p, f);
    paintStaticOverlays(p, f);
    paintChrome(p, f);
}

void TimelineView::paintNoteMarks(QPainter& p, const Frame& f) const {
    if (m_noteMarks.empty()) return;
    const QColor flag(0xf0, 0xa2, 0x02), edge = m_colors.dark ? QColor(0x1e, 0x1f, 0x22) : QColor(0x5a, 0x40, 0x00);
    const QRect lane(f.plot.left(), f.lane.top(), f.plot.width(), f.lane.height());
    p.save();
    p.setClipRect(lane.adjusted(-6, 0, 6, 0));
    p.setRenderHint(QPainter::Antialiasing, true);
    for (const NoteMark& m : m_noteMarks) {
        if (m.endNs < f.t0 || m.startNs > f.t1) continue;
        const double x0 = f.plot.left() + double(m.startNs - f.t0) / f.nsPerPx;
        const double x1 = f.plot.left() + double(m.endNs - f.t0) / f.nsPerPx;
        // The span as a bracket along the lane's bottom edge.
        const double l = std::max(x0, double(lane.left())), r = std::min(x1, double(lane.right()));
        if (r - l >= 2) p.fillRect(QRectF(l, lane.bottom() - 2, r - l, 3), flag);
        // A flag at the start: a pole and a pennant.
        if (x0 >= lane.left() - 6 && x0 <= lane.right() + 6) {
            QPainterPath pennant;
            const double top = lane.top() + 1, h = std::min(9.0, lane.height() * 0.55);
            pennant.moveTo(x0, top);
            pennant.lineTo(x0 + h * 1.1, top + h / 2);
            pennant.lineTo(x0, top + h);
            pennant.closeSubpath();
            p.setPen(QPen(edge, 1));
            p.drawLine(QPointF(x0, top), QPointF(x0, lane.bottom()));
            p.setBrush(flag);
            p.drawPath(pennant);
        }
    }
    p.restore();
}

} // namespace prism::ui
