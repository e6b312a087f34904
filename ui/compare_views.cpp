#include "compare_views.h"

#include "view_style.h"

#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <set>

namespace prism::ui {

namespace {

const QColor kColorA(78, 121, 167);  // run A: blue-grey
const QColor kColorB(242, 142, 43);  // run B: orange
const QColor kSlower(214, 39, 40);   // slower in B
const QColor kFaster(31, 119, 180);  // faster in B

QColor blend(const QColor& a, const QColor& b, double t) {
    t = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

} // namespace

// ---- step chart ---------------------------------------------------------------------------------------------

CompareStepChart::CompareStepChart(QWidget* parent) : QWidget(parent) {
    setMinimumSize(240, 150);
    setToolTip(tr("Step time of both runs; click a step to show it in both timelines"));
}

void CompareStepChart::setRuns(std::vector<double> a, std::vector<double> b, double medianA, double medianB) {
    m_a = std::move(a);
    m_b = std::move(b);
    m_medianA = medianA;
    m_medianB = medianB;
    m_maxMs = 1e-3;
    for (double v : m_a) m_maxMs = std::max(m_maxMs, v);
    for (double v : m_b) m_maxMs = std::max(m_maxMs, v);
    update();
}

void CompareStepChart::setShownSteps(double first, double last) {
    m_shownFirst = first;
    m_shownLast = last;
    update();
}

QRect CompareStepChart::plotRect() const {
    const int fh = fontMetrics().height();
    return rect().adjusted(fontMetrics().horizontalAdvance("000.00 ms") + 8, fh * 3, -10, -fh - 8);
}

double CompareStepChart::xOfStep(int step) const {
    const QRect p = plotRect();
    const std::size_t n = std::max<std::size_t>({m_a.size(), m_b.size(), 2});
    return p.left() + double(step) * p.width() / double(n - 1);
}

int CompareStepChart::stepAtX(double x) const {
    const std::size_t n = std::max(m_a.size(), m_b.size());
    if (n == 0) return -1;
    const QRect p = plotRect();
    const double k = (x - p.left()) * double(std::max<std::size_t>(n, 2) - 1) / std::max(1, p.width());
    return std::clamp(int(std::lround(k)), 0, int(n) - 1);
}

void CompareStepChart::mousePressEvent(QMouseEvent* event) {
    const int k = stepAtX(event->position().x());
    if (k >= 0) emit stepClicked(k);
}

void CompareStepChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const ViewColors colors = ViewColors::from(palette());
    p.fillRect(rect(), colors.background);
    const QRect plot = plotRect();
    const int fh = fontMetrics().height();
    p.setPen(colors.text);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(6, 2, width() - 12, fh), Qt::AlignLeft | Qt::AlignVCenter, tr("Step time"));
    p.setFont(font());
    // Legend: A and B with their medians.
    int x = 6;
    for (const auto& [name, color, median] :
         {std::tuple{tr("A"), kColorA, m_medianA}, std::tuple{tr("B"), kColorB, m_medianB}}) {
        const QString text = tr("%1  median %2").arg(name, formatNs(std::int64_t(median * 1e6)));
        p.setPen(QPen(color, 3));
        p.drawLine(x, fh + 4 + fh / 2, x + 18, fh + 4 + fh / 2);
        p.setPen(colors.text);
        p.drawText(x + 22, fh + 4, fontMetrics().horizontalAdvance(text) + 4, fh, Qt::AlignVCenter, text);
        x += 22 + fontMetrics().horizontalAdvance(text) + 18;
    }
    p.setPen(colors.grid);
    p.drawRect(plot);
    if (m_a.empty() && m_b.empty()) return;
    const double top = m_maxMs * 1.1;
    auto yOf = [&](double ms) { return plot.bottom() - ms / top * plot.height(); };
    // Axis: 0 and the top, a middle line; step numbers below.
    p.setPen(colors.mutedText);
    for (double v : {0.0, top / 2, top}) {
        const double y = yOf(v);
        p.drawText(QRectF(0, y - fh / 2.0, plot.left() - 4, fh), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(v, 'f', top < 10 ? 2 : top < 1000 ? 1 : 0) + QStringLiteral(" ms"));
        p.setPen(colors.grid);
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
        p.setPen(colors.mutedText);
    }
    const int n = int(std::max(m_a.size(), m_b.size()));
    const int every = std::max(1, n / std::max(1, plot.width() / 40));
    for (int k = 0; k < n; k += every)
        p.drawText(QRectF(xOfStep(k) - 20, plot.bottom() + 2, 40, fh), Qt::AlignCenter, QString::number(k));
    if (m_shownFirst >= 0 && m_shownLast >= m_shownFirst) {
        const double x0 = xOfStep(0) + (m_shownFirst) * (xOfStep(1) - xOfStep(0));
        const double x1 = xOfStep(0) + (m_shownLast) * (xOfStep(1) - xOfStep(0));
        QColor shade = colors.selection;
        shade.setAlpha(40);
        p.fillRect(QRectF(std::max<double>(x0, plot.left()), plot.top(),
                          std::max(2.0, std::min<double>(x1, plot.right()) - std::max<double>(x0, plot.left())),
                          plot.height()),
                   shade);
    }
    for (const auto& [values, color, median] :
         {std::tuple{&m_a, kColorA, m_medianA}, std::tuple{&m_b, kColorB, m_medianB}}) {
        QPainterPath path;
        for (std::size_t k = 0; k < values->size(); ++k) {
            const QPointF pt(xOfStep(int(k)), yOf((*values)[k]));
            k ? path.lineTo(pt) : path.moveTo(pt);
        }
        p.setPen(QPen(color, 2));
        p.drawPath(path);
        p.setPen(QPen(color, 1, Qt::DashLine));
        p.drawLine(QPointF(plot.left(), yOf(median)), QPointF(plot.right(), yOf(median)));
    }
}

// ---- topology coloured by difference ------------------------------------------------------------------------

CompareTopology::CompareTopology(QWidget* parent) : QWidget(parent) {
    setMinimumSize(200, 120);
    setMouseTracking(true);
}

void CompareTopology::setComparison(const SessionPtr& b, const JobComparison* job) {
    m_b = b;
    m_hosts.clear();
    m_maxDelta = 0;
    const Topology& topo = b->capture.topology;
    const std::size_t N = topo.nics.size();
    m_delta.assign(N, 0);
    m_link.assign(N, 0);
    m_inJob.assign(N, 0);
    m_tips.assign(N, QString());
    if (job && job->jobB >= 0 && std::size_t(job->jobB) < b->analysis.jobs.size()) {
        const JobTimeline& tl = b->analysis.jobs[std::size_t(job->jobB)].timeline;
        std::set<int> hosts;
        auto nicOf = [&](const std::string& ip) {
            const auto a = IpAddr::parse(ip);
            const auto n = a ? topo.nicByIp(*a) : std::nullopt;
            return n ? *n : -1;
        };
        for (const RankTimeline& r : tl.ranks) {
            const int n = nicOf(r.ip);
            if (n < 0) continue;
            m_inJob[std::size_t(n)] = 1;
            hosts.insert(topo.nics[std::size_t(n)].host);
        }
        m_hosts.assign(hosts.begin(), hosts.end());
        std::sort(m_hosts.begin(), m_hosts.end(), [&](int x, int y) {
            return x < 0 || y < 0 ? x < y : topo.hosts[std::size_t(x)].name < topo.hosts[std::size_t(y)].name;
        });
        // Each cause names its NICs; the largest |delta| colours a NIC.
        for (std::size_t i = 0; i < job->differences.size(); ++i) {
            const Difference& d = job->differences[i];
            if (d.effectOf >= 0 || d.what == "shape") continue;
            std::vector<int> nics;
            const DiffPlace& w = d.where;
            if (w.ip.empty() && w.srcIp.empty()) { // the whole job or a stage
                for (const RankTimeline& r : tl.ranks)
                    if (w.stage < 0 || r.stage == w.stage) nics.push_back(nicOf(r.ip));
            }
            for (const std::string& ip : w.ips) nics.push_back(nicOf(ip));
            for (const std::string* ip : {&w.ip, &w.srcIp, &w.dstIp})
                if (!ip->empty()) nics.push_back(nicOf(*ip));
            for (int n : nics) {
                if (n < 0) continue;
                const std::size_t k = std::size_t(n);
                if (std::fabs(d.deltaMsPerStep) > std::fabs(m_delta[k])) m_delta[k] = d.deltaMsPerStep;
                if (d.what == "link") m_link[k] = 1;
                m_tips[k] += QStringLiteral("\n%1. %2").arg(i + 1).arg(QString::fromStdString(d.message));
                m_maxDelta = std::max(m_maxDelta, std::fabs(d.deltaMsPerStep));
            }
        }
    }
    layout();
    update();
}

double CompareTopology::deltaOfNic(int nic) const {
    return nic >= 0 && std::size_t(nic) < m_delta.size() ? m_delta[std::size_t(nic)] : 0.0;
}

bool CompareTopology::linkChanged(int nic) const {
    return nic >= 0 && std::size_t(nic) < m_link.size() && m_link[std::size_t(nic)];
}

QRect CompareTopology::nicRect(int nic) const {
    return nic >= 0 && std::size_t(nic) < m_nicRect.size() ? m_nicRect[std::size_t(nic)] : QRect();
}

void CompareTopology::resizeEvent(QResizeEvent*) { layout(); }

void CompareTopology::layout() {
    m_hostRect.assign(m_hosts.size(), QRect());
    m_nicRect.assign(m_delta.size(), QRect());
    if (!m_b || m_hosts.empty()) return;
    const Topology& topo = m_b->capture.topology;
    const int fh = fontMetrics().height();
    const QRect area = rect().adjusted(6, fh * 2 + 6, -6, -fh - 8);
    const int n = int(m_hosts.size());
    // Columns of host boxes: as square as the area allows.
    int cols = 1;
    while (cols < n && double(area.width()) / (cols + 1) > double(area.height()) / ((n + cols) / (cols + 1)) * 1.6)
        ++cols;
    const int rows = (n + cols - 1) / cols;
    const int w = area.width() / cols, h = std::max(fh * 2 + 8, area.height() / std::max(1, rows));
    for (int i = 0; i < n; ++i) {
        const QRect box(area.left() + (i % cols) * w + 2, area.top() + (i / cols) * h + 2, w - 4, h - 4);
        m_hostRect[std::size_t(i)] = box;
        const int host = m_hosts[std::size_t(i)];
        if (host < 0) continue;
        const std::vector<int>& nics = topo.hosts[std::size_t(host)].nics;
        const int c = int(nics.size());
        const QRect cells = box.adjusted(4, fh + 4, -4, -4);
        const int cw = c ? std::max(4, cells.width() / c) : 0;
        for (int k = 0; k < c; ++k)
            m_nicRect[std::size_t(nics[std::size_t(k)])] = QRect(cells.left() + k * cw + 1, cells.top(), cw - 2, cells.height());
    }
}

void CompareTopology::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const ViewColors colors = ViewColors::from(palette());
    p.fillRect(rect(), colors.background);
    const int fh = fontMetrics().height();
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(colors.text);
    p.drawText(QRect(6, 2, width() - 12, fh), Qt::AlignLeft | Qt::AlignVCenter, tr("Topology: what changed in B"));
    p.setFont(font());
    p.setPen(colors.mutedText);
    p.drawText(QRect(6, fh + 4, width() - 12, fh), Qt::AlignLeft | Qt::AlignVCenter,
               tr("red: slower in B, blue: faster; outlined: its link"));
    if (!m_b) return;
    const Topology& topo = m_b->capture.topology;
    for (std::size_t i = 0; i < m_hosts.size(); ++i) {
        const QRect box = m_hostRect[i];
        p.setPen(colors.grid);
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(box, 4, 4);
        const int host = m_hosts[i];
        if (host < 0) continue;
        p.setPen(colors.text);
        p.drawText(box.adjusted(4, 2, -4, 0), Qt::AlignLeft | Qt::AlignTop, QString::fromStdString(topo.hosts[std::size_t(host)].name));
        for (int n : topo.hosts[std::size_t(host)].nics) {
            const QRect cell = m_nicRect[std::size_t(n)];
            if (cell.isEmpty()) continue;
            const double d = m_delta[std::size_t(n)];
            QColor fill = m_inJob[std::size_t(n)] ? colors.grid : colors.background;
            if (d != 0 && m_maxDelta > 0)
                fill = blend(colors.background, d > 0 ? kSlower : kFaster, 0.25 + 0.75 * std::fabs(d) / m_maxDelta);
            p.setBrush(fill);
            p.setPen(m_link[std::size_t(n)] ? QPen(kSlower.darker(130), 3) : QPen(colors.mutedText, 1));
            p.drawRect(cell);
            if (cell.width() >= fontMetrics().horizontalAdvance("00") + 2 && !topo.nics[std::size_t(n)].gpus.empty()) {
                p.setPen(colors.text);
                p.drawText(cell, Qt::AlignCenter, QString::number(topo.nics[std::size_t(n)].gpus.front()));
            }
        }
    }
    // Scale: the largest change named.
    p.setPen(colors.mutedText);
    p.drawText(QRect(6, height() - fh - 4, width() - 12, fh), Qt::AlignLeft | Qt::AlignVCenter,
               m_maxDelta > 0 ? tr("strongest colour: %1 per step").arg(formatNs(std::int64_t(m_maxDelta * 1e6)))
                              : tr("no difference above noise"));
}

bool CompareTopology::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        for (std::size_t n = 0; n < m_nicRect.size(); ++n)
            if (m_nicRect[n].contains(help->pos()) && m_b) {
                const Nic& nic = m_b->capture.topology.nics[n];
                QString tip = QString::fromStdString(m_b->capture.topology.rankLabel(nic.ip) + " (" + nic.ip.toString() +
                                                     ", " + nic.switchName + ")");
                tip += m_tips[n].isEmpty() ? tr("\nno difference") : m_tips[n];
                QToolTip::showText(help->globalPos(), tip, this);
                return true;
            }
        QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

} // namespace prism::ui
