#include "rank_chart.h"

#include "view_style.h"

#include <QFileInfo>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace prism::ui {

RankChart::RankChart(ViewState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    setObjectName("rankChart");
    setMinimumHeight(120);
    connect(m_state, &ViewState::jobChanged, this, &RankChart::recompute);
    connect(m_state, &ViewState::selectionChanged, this, [this](const Selection& s) {
        // Follow the selected step; a segment selects its step too. Other selections keep the step shown.
        int step = m_step;
        if (s.kind == Selection::Kind::Step) step = s.step;
        if (s.kind == Selection::Kind::Segment && m_state->jobData()) {
            const JobTimeline& tl = m_state->jobData()->timeline();
            const RankTimeline& rt = tl.ranks.at(std::size_t(s.rank));
            if (s.segment >= 0 && std::size_t(s.segment) < rt.segmentCount())
                if (const int st = tl.stepAt(rt.segment(std::size_t(s.segment)).startNs); st >= 0) step = st;
        }
        if (s.kind == Selection::Kind::None) step = -1;
        if (step != m_step) {
            m_step = step;
            recompute();
        } else {
            update();
        }
    });
    recompute();
}

void RankChart::recompute() {
    m_splits.clear();
    m_max = 1;
    const JobDataPtr& d = m_state->jobData();
    if (!d) {
        m_step = -1;
        update();
        return;
    }
    if (m_step >= int(d->steps().size())) m_step = -1;
    const int n = d->rankCount();
    m_splits.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
        m_splits[std::size_t(r)] = m_step >= 0 ? d->splitInStep(r, m_step) : d->jobSplit(r);
        m_max = std::max(m_max, m_splits[std::size_t(r)].total());
    }
    update();
}

QRect RankChart::plotRect(const QSize& size) const {
    QFontMetrics fm(font());
    const int left = fm.horizontalAdvance("000.000 ms") + 14;
    const int top = fm.height() * 3 + 8;
    const int bottom = fm.height() + 10;
    return QRect(left, top, std::max(10, size.width() - left - 12), std::max(10, size.height() - top - bottom));
}

int RankChart::rankAt(const QPoint& pos) const {
    const QRect plot = plotRect(size());
    const int n = int(m_splits.size());
    if (n == 0 || pos.x() < plot.left() || pos.x() > plot.right() || pos.y() < plot.top() - 4 ||
        pos.y() > plot.bottom() + 4)
        return -1;
    const double w = double(plot.width()) / n;
    if (w >= 1) return std::clamp(int((pos.x() - plot.left()) / w), 0, n - 1);
    // Several ranks per pixel: the column shows (and a click picks) its slowest rank.
    const int a = int((pos.x() - plot.left()) / w), b = std::min(n, int((pos.x() - plot.left() + 1) / w) + 1);
    int best = a;
    for (int r = a; r < b; ++r)
        if (m_splits[std::size_t(r)].total() > m_splits[std::size_t(best)].total()) best = r;
    return best;
}

void RankChart::paint(QPainter& p, const QSize& size) const {
    const ViewColors c = ViewColors::from(palette());
    p.fillRect(QRect(QPoint(0, 0), size), c.background);
    QFontMetrics fm(font());
    const JobDataPtr& d = m_state->jobData();
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(c.text);
    if (!d) {
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, tr("No job selected"));
        return;
    }
    const auto& steps = d->steps();
    QString title = m_step >= 0
        ? tr("Time per rank in step %1 (%2)")
              .arg(steps[std::size_t(m_step)].index)
              .arg(formatNs(steps[std::size_t(m_step)].durationNs()))
        : tr("Time per rank over the whole job") +
              (steps.empty() ? QString() : tr(" — select a step to see one step"));
    p.drawText(QRect(8, 4, size.width() - 16, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, title);
    p.setFont(font());
    // Legend.
    int lx = 8;
    const int ly = fm.height() + 8;
    for (auto [color, text] : {std::pair{c.compute(), tr("compute")}, std::pair{c.comm(), tr("communication (PP, DP)")},
                               std::pair{c.wait(), tr("waiting")}}) {
        p.fillRect(QRect(lx, ly + 2, fm.height() - 4, fm.height() - 4), color);
        lx += fm.height();
        p.setPen(c.text);
        p.drawText(QPoint(lx, ly + fm.ascent()), text);
        lx += fm.horizontalAdvance(text) + 16;
    }
    const QRect plot = plotRect(size);
    // Y axis: gridlines at a 1-2-5 step, about one per 40 px.
    const double want = double(m_max) / std::max(1, plot.height() / 40);
    double tick = std::pow(10.0, std::floor(std::log10(std::max(1.0, want))));
    for (double mult : {1.0, 2.0, 5.0, 10.0})
        if (tick * mult >= want) {
            tick *= mult;
            break;
        }
    for (double v = 0; v <= double(m_max); v += tick) {
        const int y = plot.bottom() - int(v / double(m_max) * plot.height());
        p.setPen(c.grid);
        p.drawLine(plot.left(), y, plot.right(), y);
        p.setPen(c.mutedText);
        p.drawText(QRect(0, y - fm.height() / 2, plot.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   v == 0 ? QString("0") : formatNsAtStep(std::int64_t(v), std::int64_t(tick)));
    }
    const int n = int(m_splits.size());
    if (n == 0) return;
    const double w = double(plot.width()) / n;
    const auto hl = m_state->highlightedRanks();
    const auto& ranks = d->timeline().ranks;
    // One bar per pixel column at most: with more ranks than columns, the column's slowest rank.
    const int columns = w >= 1 ? n : plot.width();
    for (int col = 0; col < columns; ++col) {
        int r = col;
        if (w < 1) {
            const int a = int(col / w), b = std::min(n, int((col + 1) / w));
            r = a;
            for (int k = a; k < b; ++k)
                if (m_splits[std::size_t(k)].total() > m_splits[std::size_t(r)].total()) r = k;
        }
        const TimeSplit& s = m_splits[std::size_t(r)];
        const int x0 = w >= 1 ? plot.left() + int(std::floor(r * w)) : plot.left() + col;
        const int x1 = w >= 1 ? plot.left() + int(std::floor((r + 1) * w)) : x0 + 1;
        const int bw = std::max(1, x1 - x0 - (w >= 4 ? 1 : 0));
        double y = plot.bottom() + 1;
        for (auto [v, color] :
             {std::pair{s.compute, c.compute()}, std::pair{s.comm, c.comm()}, std::pair{s.wait, c.wait()}}) {
            const double h = double(v) / double(m_max) * plot.height();
            p.fillRect(QRectF(x0, y - h, bw, h), color);
            y -= h;
        }
        if (d->isStraggler(r)) p.fillRect(QRect(x0, plot.bottom() + 3, bw, 4), c.slow);
        if (std::binary_search(hl.begin(), hl.end(), r)) {
            p.setPen(QPen(c.selection, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(x0 - 1, y - 1, bw + 2, plot.bottom() - y + 2));
        }
    }
    // PP stage boundaries and names under the axis.
    p.setPen(c.mutedText);
    int start = 0;
    for (int r = 1; r <= n; ++r) {
        if (r < n && ranks[std::size_t(r)].stage == ranks[std::size_t(start)].stage) continue;
        const int xa = plot.left() + int(start * w), xb = plot.left() + int(r * w);
        if (r < n) {
            p.setPen(QPen(c.mutedText, 1, Qt::DashLine));
            p.drawLine(xb, plot.top(), xb, plot.bottom() + 8);
        }
        p.setPen(c.mutedText);
        const QString label = d->info().pp > 1
            ? tr("stage %1 (ranks in timeline order)").arg(ranks[std::size_t(start)].stage)
            : tr("%1 ranks in timeline order").arg(n);
        p.drawText(QRect(xa, plot.bottom() + 6, xb - xa, fm.height()), Qt::AlignCenter,
                   fm.elidedText(label, Qt::ElideRight, std::max(0, xb - xa)));
        start = r;
    }
}

void RankChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, size());
}

void RankChart::renderExport(QPainter& painter, const QSize& size, bool) const { paint(painter, size); }

QString RankChart::exportTitle() const {
    const JobDataPtr& d = m_state->jobData();
    if (!d) return tr("Time per rank");
    const QString capture = QFileInfo(d->session().source).fileName();
    return tr("%1 — %2 — time per rank, %3")
        .arg(capture, d->title(),
             m_step >= 0 ? tr("step %1").arg(d->steps()[std::size_t(m_step)].index) : tr("whole job"));
}

void RankChart::mousePressEvent(QMouseEvent* event) {
    int r = rankAt(event->position().toPoint());
    if (r >= 0) m_state->select(Selection::ofRank(r), true);
}

bool RankChart::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(event);
        const int r = rankAt(he->pos());
        const JobDataPtr& d = m_state->jobData();
        if (r < 0 || !d) {
            QToolTip::hideText();
            return true;
        }
        const TimeSplit& s = m_splits[std::size_t(r)];
        const double t = std::max<double>(1, double(s.total()));
        QToolTip::showText(he->globalPos(),
                           tr("<b>%1</b><br>compute %2 (%3%)<br>communication %4 (%5%)<br>waiting %6 (%7%)")
                               .arg(d->rankLabel(r))
                               .arg(formatNs(s.compute))
                               .arg(qRound(100 * s.compute / t))
                               .arg(formatNs(s.comm))
                               .arg(qRound(100 * s.comm / t))
                               .arg(formatNs(s.wait))
                               .arg(qRound(100 * s.wait / t)),
                           this);
        return true;
    }
    return QWidget::event(event);
}

} // namespace prism::ui
