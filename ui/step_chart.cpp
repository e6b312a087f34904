#include "step_chart.h"

#include "view_style.h"

#include <QChart>
#include <QChartView>
#include <QFileInfo>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMouseEvent>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <span>
#include <tuple>

namespace prism::ui {

StepChart::StepChart(ViewState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    setObjectName("stepChart");
    m_chart = new QChart;
    m_chart->legend()->setVisible(true);
    m_chart->legend()->setAlignment(Qt::AlignTop);
    m_chart->setMargins(QMargins(4, 2, 8, 2));
    m_chart->setAnimationOptions(QChart::NoAnimation);
    m_line = new QLineSeries(m_chart);
    m_line->setName(tr("step time"));
    m_median = new QLineSeries(m_chart);
    m_median->setName(tr("median"));
    m_usual = new QLineSeries(m_chart);
    m_usual->setName(tr("usual step"));
    m_slow = new QScatterSeries(m_chart);
    m_slow->setName(tr("slow step"));
    m_slow->setMarkerSize(9);
    m_selected = new QScatterSeries(m_chart);
    m_selected->setName(tr("selected"));
    m_selected->setMarkerSize(13);
    for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*>{m_line, m_median, m_usual, m_slow, m_selected})
        m_chart->addSeries(s);
    m_x = new QValueAxis(m_chart);
    m_x->setTitleText(tr("step"));
    m_x->setLabelFormat("%d");
    m_y = new QValueAxis(m_chart);
    m_chart->addAxis(m_x, Qt::AlignBottom);
    m_chart->addAxis(m_y, Qt::AlignLeft);
    for (QAbstractSeries* s : m_chart->series()) {
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    }
    m_view = new QChartView(m_chart, this);
    m_view->setObjectName("stepChartView");
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->viewport()->installEventFilter(this);
    m_view->viewport()->setMouseTracking(true);
    m_view->setToolTip(tr("Click a step to select it in the timeline"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    applyColors();
    // The min/max reduction depends on the plot width: redo it when the width changes enough to matter.
    connect(m_chart, &QChart::plotAreaChanged, this, [this](const QRectF& r) {
        if (m_lineWidth < 0 || std::abs(int(r.width()) - m_lineWidth) > 32) fillLine();
    });
    connect(m_state, &ViewState::jobChanged, this, &StepChart::rebuild);
    connect(m_state, &ViewState::selectionChanged, this, &StepChart::updateSelection);
    connect(m_state->zoom(), &ZoomControl::rangeChanged, this, &StepChart::followRange);
    rebuild();
}

void StepChart::applyColors() {
    const ViewColors c = ViewColors::from(palette());
    m_chart->setBackgroundBrush(c.background);
    m_chart->setPlotAreaBackgroundVisible(false);
    m_chart->setTitleBrush(c.text);
    m_chart->legend()->setLabelColor(c.text);
    for (QValueAxis* a : {m_x, m_y}) {
        a->setLabelsColor(c.text);
        a->setTitleBrush(c.text);
        a->setGridLineColor(c.grid);
        a->setLinePenColor(c.mutedText);
        a->setMinorGridLineColor(c.grid);
    }
    QPen line(c.kind[int(SegmentKind::Compute)].darker(c.dark ? 70 : 130), 1.5);
    m_line->setPen(line);
    QPen median(c.mutedText, 1, Qt::DashLine);
    m_median->setPen(median);
    QPen usual(c.text, 1, Qt::DotLine);
    m_usual->setPen(usual);
    m_slow->setColor(c.slow);
    m_slow->setBorderColor(c.slow.darker(130));
    m_selected->setColor(Qt::transparent);
    m_selected->setBorderColor(c.selection);
    QPen sel(c.selection, 2.5);
    m_selected->setPen(sel);
    m_selected->setBrush(Qt::NoBrush);
}

void StepChart::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) applyColors();
    QWidget::changeEvent(event);
}

void StepChart::rebuild() {
    m_lineWidth = -1;
    const JobDataPtr& d = m_state->jobData();
    m_built = d.get();
    m_median->clear();
    m_usual->clear();
    m_usualNs = 0;
    m_slow->clear();
    const auto* steps = d ? &d->steps() : nullptr;
    const bool empty = !d || steps->empty();
    // Without steps there is nothing to read on axes or a legend; the title says why.
    m_x->setVisible(!empty);
    m_y->setVisible(!empty);
    m_chart->legend()->setVisible(!empty);
    if (empty) {
        m_line->clear();
        m_selected->clear();
        m_chart->setTitle(d ? tr("%1: no steps detected").arg(QString::fromStdString(d->info().id))
                            : tr("Step time (no job selected)"));
        return;
    }
    std::int64_t maxNs = 0;
    for (const StepInfo& s : *steps) maxNs = std::max(maxNs, s.durationNs());
    if (maxNs >= 2'000'000'000) {
        m_unitNs = 1e9;
        m_unit = "s";
    } else if (maxNs >= 2'000'000) {
        m_unitNs = 1e6;
        m_unit = "ms";
    } else {
        m_unitNs = 1e3;
        m_unit = "µs";
    }
    m_y->setTitleText(tr("step time (%1)").arg(m_unit));
    const double first = steps->front().index, last = steps->back().index;
    m_x->setTickType(QValueAxis::TicksDynamic);
    m_x->setTickAnchor(0);
    m_y->setRange(0, double(maxNs) / m_unitNs * 1.1);
    m_y->applyNiceNumbers();
    const double median = double(d->medianStepNs()) / m_unitNs;
    m_median->append(first - 0.5, median);
    m_median->append(last + 0.5, median);
    // When over half of the steps are slowed, slow steps are judged against the fastest cluster of durations
    // (the finding's usual_step_ms), not the median: draw it, so that the chart reads like the finding.
    for (const Finding& f : d->info().findings)
        if (f.kind == "slow_step" || f.kind == "periodic_stall")
            for (const auto& [name, value] : f.evidence)
                if (name == "usual_step_ms" && value * 1e6 < 0.999 * double(d->medianStepNs())) m_usualNs = value * 1e6;
    if (m_usualNs > 0) {
        m_usual->append(first - 0.5, m_usualNs / m_unitNs);
        m_usual->append(last + 0.5, m_usualNs / m_unitNs);
    }
    for (QLegendMarker* marker : m_chart->legend()->markers(m_usual)) marker->setVisible(m_usualNs > 0);
    QList<QPointF> slow;
    for (const StepInfo& s : *steps)
        if (s.slow) slow.append(QPointF(s.index, double(s.durationNs()) / m_unitNs));
    m_slow->replace(slow);
    const QString usualText =
        m_usualNs > 0 ? tr(", usual %1").arg(formatNs(std::int64_t(std::llround(m_usualNs)))) : QString();
    m_baseTitle = tr("%1 — %2 steps, median %3%4, %5 slow")
                      .arg(QString::fromStdString(d->info().id))
                      .arg(steps->size())
                      .arg(formatNs(d->medianStepNs()))
                      .arg(usualText)
                      .arg(slow.size());
    followRange();
    updateSelection();
}

std::pair<double, double> StepChart::fullRange() const {
    const JobDataPtr& d = m_state->jobData();
    if (!d || d->steps().empty()) return {0.0, 1.0};
    const double first = d->steps().front().index, last = d->steps().back().index;
    return {first - 0.5, std::max(first + 1, last + 0.5)};
}

std::pair<double, double> StepChart::clampSteps(double lo, double hi) const {
    const auto [flo, fhi] = fullRange();
    // At least 8 steps wide (around the middle), never beyond the job's steps.
    const double span = std::clamp(hi - lo, std::min(8.0, fhi - flo), fhi - flo);
    lo = std::clamp((lo + hi - span) / 2, flo, fhi - span);
    return {lo, lo + span};
}

double StepChart::xOfTime(std::int64_t t) const {
    const auto& st = m_state->jobData()->steps();
    auto it = std::upper_bound(st.begin(), st.end(), t, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; });
    if (it == st.end()) return st.back().index + 0.5;
    if (t <= it->startNs) return it->index - 0.5;
    return it->index - 0.5 + double(t - it->startNs) / double(std::max<std::int64_t>(1, it->durationNs()));
}

std::int64_t StepChart::timeAtX(double x) const {
    const auto& st = m_state->jobData()->steps();
    auto it = std::upper_bound(st.begin(), st.end(), x, [](double v, const StepInfo& s) { return v < s.index + 0.5; });
    if (it == st.end()) return st.back().endNs;
    if (x <= it->index - 0.5) return it->startNs;
    return it->startNs + std::llround((x - (it->index - 0.5)) * double(it->durationNs()));
}

void StepChart::setVisibleSteps(double lo, double hi) {
    const JobDataPtr& d = m_state->jobData();
    if (!d || d.get() != m_built || d->steps().empty()) return;
    std::tie(lo, hi) = clampSteps(lo, hi);
    m_state->zoom()->setRange(timeAtX(lo), timeAtX(hi), false);
}

void StepChart::followRange() {
    const JobDataPtr& d = m_state->jobData();
    if (!d || d.get() != m_built || d->steps().empty()) return;
    const auto [flo, fhi] = fullRange();
    const auto [lo, hi] = clampSteps(xOfTime(m_state->zoom()->start()), xOfTime(m_state->zoom()->end()));
    const double span = hi - lo;
    if (lo == m_x->min() && hi == m_x->max() && m_lineWidth >= 0) return;
    m_x->setRange(lo, hi);
    double interval = std::pow(10.0, std::floor(std::log10(std::max(1.0, span) / 5)));
    if (span / interval > 12) interval *= 2;
    if (span / interval > 12) interval *= 2.5;
    m_x->setTickInterval(std::max(1.0, interval));
    const bool zoomed = span < fhi - flo - 1e-9;
    m_chart->setTitle(zoomed ? tr("%1 — showing steps %2–%3 (wheel: zoom, drag: pan, double-click: all)")
                                   .arg(m_baseTitle)
                                   .arg(int(std::ceil(lo)))
                                   .arg(int(std::floor(hi)))
                             : m_baseTitle);
    fillLine();
}

std::pair<double, double> StepChart::visibleSteps() const { return {m_x->min(), m_x->max()}; }

QString StepChart::title() const { return m_chart->title(); }

void StepChart::fillLine() {
    const JobDataPtr& d = m_state->jobData();
    if (!d || d->steps().empty()) {
        m_line->clear();
        return;
    }
    const auto& all = d->steps();
    const int width = std::max(100, int(m_chart->plotArea().width()));
    m_lineWidth = int(m_chart->plotArea().width());
    // The visible steps and one beyond each side, so the line runs to the plot's edges.
    auto from = std::lower_bound(all.begin(), all.end(), m_x->min(), [](const StepInfo& s, double v) { return s.index < v; });
    auto to = std::upper_bound(from, all.end(), m_x->max(), [](double v, const StepInfo& s) { return v < s.index; });
    if (from != all.begin()) --from;
    if (to != all.end()) ++to;
    const std::span<const StepInfo> steps(from, to);
    QList<QPointF> pts;
    if (int(steps.size()) <= 2 * width) {
        pts.reserve(qsizetype(steps.size()));
        for (const StepInfo& s : steps) pts.append(QPointF(s.index, double(s.durationNs()) / m_unitNs));
    } else {
        // Min and max of each pixel column, in step order, so spikes survive the reduction.
        const double per = double(steps.size()) / width;
        for (int c = 0; c < width; ++c) {
            std::size_t a = std::size_t(c * per), b = std::min(steps.size(), std::size_t((c + 1) * per));
            if (a >= b) continue;
            std::size_t lo = a, hi = a;
            for (std::size_t i = a; i < b; ++i) {
                if (steps[i].durationNs() < steps[lo].durationNs()) lo = i;
                if (steps[i].durationNs() > steps[hi].durationNs()) hi = i;
            }
            for (std::size_t i : {std::min(lo, hi), std::max(lo, hi)})
                pts.append(QPointF(steps[i].index, double(steps[i].durationNs()) / m_unitNs));
        }
    }
    m_line->replace(pts);
    // Few steps: show each as a point, so it is clear what a click picks.
    m_line->setPointsVisible(int(steps.size()) * 8 <= width);
}

int StepChart::linePointCount() const { return int(m_line->count()); }

void StepChart::updateSelection() {
    m_selected->clear();
    const JobDataPtr& d = m_state->jobData();
    const Selection& s = m_state->selection();
    if (!d || s.kind != Selection::Kind::Step || s.step < 0 || s.step >= int(d->steps().size())) return;
    const StepInfo& st = d->steps()[std::size_t(s.step)];
    if (st.index < m_x->min() || st.index > m_x->max()) { // selected elsewhere: bring it into view (a pan)
        ZoomControl* z = m_state->zoom();
        const std::int64_t span = z->span(), from = st.startNs + st.durationNs() / 2 - span / 2;
        z->setRange(from, from + span, false);
    }
    m_selected->append(st.index, double(st.durationNs()) / m_unitNs);
}

QPoint StepChart::viewportPointOfStep(int step) const {
    const JobDataPtr& d = m_state->jobData();
    if (!d || step < 0 || step >= int(d->steps().size())) return {};
    const StepInfo& st = d->steps()[std::size_t(step)];
    const QPointF scene = m_chart->mapToPosition(QPointF(st.index, double(st.durationNs()) / m_unitNs), m_line);
    return m_view->mapFromScene(scene);
}

int StepChart::selectAt(const QPoint& viewportPos) {
    const JobDataPtr& d = m_state->jobData();
    if (!d || d->steps().empty()) return -1;
    const QPointF scene = m_view->mapToScene(viewportPos);
    if (!m_chart->plotArea().adjusted(-6, -6, 6, 6).contains(scene)) return -1;
    const QRectF plot = m_chart->plotArea();
    const double pxPerX = plot.width() / std::max(1e-9, m_x->max() - m_x->min());
    const double pxPerY = plot.height() / std::max(1e-9, m_y->max() - m_y->min());
    const QPointF value = m_chart->mapToValue(scene, m_line);
    const auto& steps = d->steps();
    // The step whose point is nearest on screen among those within a few pixels horizontally: with many
    // steps per pixel column, a click on a spike selects the spike.
    const double reach = 4.0 / pxPerX;
    auto lo = std::lower_bound(steps.begin(), steps.end(), value.x() - reach,
                               [](const StepInfo& s, double v) { return s.index < v; });
    auto hi =
        std::upper_bound(lo, steps.end(), value.x() + reach, [](double v, const StepInfo& s) { return v < s.index; });
    int pos = -1;
    double best = 1e300;
    for (auto it = lo; it != hi; ++it) {
        const double dx = (it->index - value.x()) * pxPerX;
        const double dy = (double(it->durationNs()) / m_unitNs - value.y()) * pxPerY;
        if (dx * dx + dy * dy < best) {
            best = dx * dx + dy * dy;
            pos = int(it - steps.begin());
        }
    }
    if (pos < 0) {
        // No step that close (sparse steps): the nearest by index.
        auto it = std::lower_bound(steps.begin(), steps.end(), value.x(),
                                   [](const StepInfo& s, double v) { return s.index < v; });
        pos = int(it - steps.begin());
        if (pos >= int(steps.size()) ||
            (pos > 0 && std::abs(steps[std::size_t(pos - 1)].index - value.x()) <= std::abs(it->index - value.x())))
            --pos;
        pos = std::clamp(pos, 0, int(steps.size()) - 1);
    }
    m_state->select(Selection::ofStep(pos), true);
    return pos;
}

bool StepChart::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_view->viewport()) {
        const JobDataPtr& d = m_state->jobData();
        if (event->type() == QEvent::MouseButtonPress) {
            auto* me = static_cast<QMouseEvent*>(event);
            if (me->button() == Qt::LeftButton) {
                // A click selects (on release, unless the mouse moved: then it was a pan).
                m_pressX = me->position().x();
                m_panPerPx = (m_x->max() - m_x->min()) / std::max(1.0, m_chart->plotArea().width());
                m_panFrom = {m_state->zoom()->start(), m_state->zoom()->end()};
                m_panning = false;
                return true;
            }
        } else if (event->type() == QEvent::MouseMove && m_pressX >= 0) {
            auto* me = static_cast<QMouseEvent*>(event);
            const double dx = me->position().x() - m_pressX;
            if (std::abs(dx) > 4) m_panning = true;
            if (m_panning && d && d.get() == m_built && !d->steps().empty()) {
                // Moves the shared range by the steps dragged over, keeping its width in time.
                const auto [t0, t1] = m_panFrom;
                const std::int64_t span = t1 - t0;
                const std::int64_t from = timeAtX(xOfTime(t0 + span / 2) - dx * m_panPerPx) - span / 2;
                m_state->zoom()->setRange(from, from + span, false);
            }
            return m_panning;
        } else if (event->type() == QEvent::MouseButtonRelease && m_pressX >= 0) {
            auto* me = static_cast<QMouseEvent*>(event);
            const bool click = !m_panning;
            m_pressX = -1;
            m_panning = false;
            if (click && selectAt(me->position().toPoint()) >= 0) return true;
            return true;
        } else if (event->type() == QEvent::MouseButtonDblClick) {
            m_state->zoom()->fitAll();
            return true;
        } else if (event->type() == QEvent::Wheel && d && !d->steps().empty()) {
            auto* we = static_cast<QWheelEvent*>(event);
            const double notches = we->angleDelta().y() / 120.0;
            if (notches == 0) return false;
            const QPointF scene = m_view->mapToScene(we->position().toPoint());
            const double at = std::clamp(m_chart->mapToValue(scene, m_line).x(), m_x->min(), m_x->max());
            const double factor = std::pow(1.25, -notches); // wheel up: zoom in
            const auto [flo, fhi] = fullRange();
            if (factor < 1 && m_x->max() - m_x->min() <= std::min(8.0, fhi - flo) + 1e-9) return true; // deepest
            m_state->zoom()->pushGestureUndo();
            setVisibleSteps(at - (at - m_x->min()) * factor, at + (m_x->max() - at) * factor);
            return true;
        } else if (event->type() == QEvent::ToolTip) {
            auto* he = static_cast<QHelpEvent*>(event);
            const JobDataPtr& d = m_state->jobData();
            const QPointF scene = m_view->mapToScene(he->pos());
            if (d && !d->steps().empty() && m_chart->plotArea().contains(scene)) {
                const double x = m_chart->mapToValue(scene, m_line).x();
                const auto& steps = d->steps();
                auto it = std::lower_bound(steps.begin(), steps.end(), x,
                                           [](const StepInfo& s, double v) { return s.index < v - 0.5; });
                if (it != steps.end()) {
                    QString text = tr("<b>Step %1</b>: %2").arg(it->index).arg(formatNs(it->durationNs()));
                    if (d->medianStepNs() > 0)
                        text += tr(" (%1% of median)")
                                    .arg(qRound(100.0 * double(it->durationNs()) / double(d->medianStepNs())));
                    if (it->slow) text += tr("<br>slow step");
                    QToolTip::showText(he->globalPos(), text, m_view);
                    return true;
                }
            }
        }
    }
    return QWidget::eventFilter(watched, event);
}

QString StepChart::exportTitle() const {
    const JobDataPtr& d = m_state->jobData();
    if (!d) return tr("Step time");
    const QString capture = QFileInfo(d->session().source).fileName();
    return tr("%1 — %2 — step time, %3 steps").arg(capture, d->title()).arg(d->steps().size());
}

void StepChart::renderExport(QPainter& painter, const QSize& size, bool) const {
    painter.save();
    m_view->render(&painter, QRectF(QPointF(0, 0), QSizeF(size)), m_view->viewport()->rect());
    painter.restore();
}

} // namespace prism::ui
