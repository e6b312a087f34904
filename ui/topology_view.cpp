#include "topology_view.h"

#include "view_style.h"

#include <QFileInfo>
#include <QHelpEvent>
#include <QMap>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace prism::ui {

TopologyView::TopologyView(ViewState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    setObjectName("topologyView");
    setMinimumSize(240, 160);
    connect(m_state, &ViewState::sessionChanged, this, &TopologyView::onSessionChanged);
    connect(m_state, &ViewState::jobChanged, this, [this] { update(); });
    connect(m_state, &ViewState::selectionChanged, this, [this] { update(); });
    onSessionChanged();
}

void TopologyView::setColorBy(ColorBy mode) {
    m_colorBy = mode;
    update();
}

void TopologyView::onSessionChanged() {
    m_layout = {};
    m_jobOfNic.clear();
    m_slowNic.clear();
    m_slowSw.clear();
    m_stragglerNic.clear();
    m_stragglers.clear();
    const SessionPtr& s = m_state->session();
    if (s) {
        const Topology& topo = s->capture.topology;
        m_jobOfNic.assign(topo.nics.size(), -1);
        m_slowNic.assign(topo.nics.size(), 0);
        m_stragglerNic.assign(topo.nics.size(), 0);
        m_slowSw.assign(topo.switches.size(), 0);
        auto nicOf = [&](const std::string& ip) -> int {
            auto a = IpAddr::parse(ip);
            if (!a) return -1;
            auto n = topo.nicByIp(*a);
            return n ? *n : -1;
        };
        const auto& jobs = s->report().jobs;
        for (int j = 0; j < int(jobs.size()); ++j) {
            for (const std::string& ip : jobs[std::size_t(j)].gpus) {
                int n = nicOf(ip);
                if (n >= 0 && m_jobOfNic[std::size_t(n)] < 0) m_jobOfNic[std::size_t(n)] = j;
            }
            for (const Finding& f : jobs[std::size_t(j)].findings) {
                if (f.kind == "slow_link") {
                    for (const std::string* ip : {&f.ip, &f.srcIp, &f.dstIp}) {
                        int n = nicOf(*ip);
                        if (n >= 0) m_slowNic[std::size_t(n)] = 1;
                    }
                } else if (f.kind == "slow_switch") {
                    if (auto sw = topo.switchByName(f.switchName)) m_slowSw[std::size_t(*sw)] = 1;
                } else if (f.kind == "slow_rank") {
                    // The network cannot tell which GPU of a TP group is slow: the finding's whole group is red.
                    const int n = nicOf(f.ip);
                    if (n >= 0) m_stragglerNic[std::size_t(n)] = 1;
                    for (const std::string& ip : f.group)
                        if (const int g = nicOf(ip); g >= 0) m_stragglerNic[std::size_t(g)] = 1;
                    if (n >= 0) m_stragglers.push_back({n, int(std::max<std::size_t>(1, f.group.size()))});
                }
            }
        }
    }
    update();
}

bool TopologyView::isSlowNic(int nic) const {
    return nic >= 0 && nic < int(m_slowNic.size()) && m_slowNic[std::size_t(nic)];
}
bool TopologyView::isSlowSwitch(int sw) const {
    return sw >= 0 && sw < int(m_slowSw.size()) && m_slowSw[std::size_t(sw)];
}

void TopologyView::resizeEvent(QResizeEvent*) { m_layout = {}; }

const TopologyView::Layout& TopologyView::currentLayout() const {
    if (m_layout.size != size()) layout(size(), m_layout);
    return m_layout;
}

void TopologyView::layout(const QSize& size, Layout& out) const {
    out = {};
    out.size = size;
    const SessionPtr& s = m_state->session();
    if (!s) return;
    const Topology& topo = s->capture.topology;
    out.host.assign(topo.hosts.size(), {});
    out.nic.assign(topo.nics.size(), {});
    out.sw.assign(topo.switches.size(), {});
    if (topo.hosts.empty()) return;
    QFontMetrics fm(font());
    const int m = 8, gap = 6;
    const int fh = fm.height();
    out.legend = QRect(m, size.height() - fh - 8, size.width() - 2 * m, fh + 4);
    const int width = size.width() - 2 * m;
    const int bottom = out.legend.top() - gap;

    // Pods: hosts that share the same set of leaf switches, in host order.
    std::map<std::vector<int>, int> podOf;
    std::vector<std::vector<int>> podHosts;
    std::vector<std::vector<int>> podLeaves;
    std::vector<char> isLeaf(topo.switches.size(), 0);
    std::size_t maxNics = 1;
    for (int h = 0; h < int(topo.hosts.size()); ++h) {
        std::vector<int> leaves;
        for (int n : topo.hosts[std::size_t(h)].nics) {
            int sw = topo.nics[std::size_t(n)].switchIndex;
            if (sw >= 0) {
                leaves.push_back(sw);
                isLeaf[std::size_t(sw)] = 1;
            }
        }
        std::sort(leaves.begin(), leaves.end());
        leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
        auto [it, inserted] = podOf.emplace(leaves, int(podHosts.size()));
        if (inserted) {
            podHosts.emplace_back();
            podLeaves.push_back(leaves);
        }
        podHosts[std::size_t(it->second)].push_back(h);
        maxNics = std::max(maxNics, topo.hosts[std::size_t(h)].nics.size());
    }
    std::vector<int> spines;
    for (int i = 0; i < int(topo.switches.size()); ++i)
        if (!isLeaf[std::size_t(i)]) spines.push_back(i);

    const int swH = fh + 8;
    // Cell size: among the sizes that fit the height, the fewest host rows (clearer links), then the largest
    // cells; digits need 14 px, so smaller cells are taken only when nothing larger fits.
    auto rowsFor = [&](int cs, int* height) {
        const int hostW = int(maxNics) * cs + 8, hostH = fh + cs + 10;
        const int c = std::max(1, (width + gap) / (hostW + gap));
        int rows = 0;
        int h = spines.empty() ? 0 : swH + 3 * gap;
        for (const auto& hosts : podHosts) {
            const int r = (int(hosts.size()) + c - 1) / c;
            rows += r;
            h += swH + 2 * gap + r * (hostH + gap) + gap;
        }
        *height = h;
        return rows;
    };
    const int avail = bottom - m;
    // The largest cell that fits; then, among cells at least 70% of it, the fewest host rows (shorter, clearer
    // links), largest first.
    int largest = 6;
    for (int cs = 40; cs >= 6; --cs) {
        int h = 0;
        rowsFor(cs, &h);
        if (h <= avail) {
            largest = cs;
            break;
        }
    }
    int cell = largest, bestRows = 1 << 30;
    for (int cs = largest; cs >= std::max(6, largest * 7 / 10); --cs) {
        int h = 0;
        const int rows = rowsFor(cs, &h);
        if (h <= avail && rows < bestRows) {
            bestRows = rows;
            cell = cs;
        }
    }
    out.cell = cell;
    int used = 0;
    rowsFor(cell, &used);
    const int hostW = int(maxNics) * cell + 8, hostH = fh + cell + 10;
    const int cols = std::max(1, (width + gap) / (hostW + gap));
    // Spare height goes to the gaps between tiers (room for the links), then to centring.
    const int tierGaps = int(podHosts.size()) + (spines.empty() ? 0 : 1);
    const int extra = std::clamp((avail - used) / std::max(1, tierGaps), 0, 90);
    int y = m + std::max(0, (avail - used - extra * tierGaps) / 2);
    auto placeRow = [&](const std::vector<int>& items, int y0, int boxW, std::vector<QRect>& rects) {
        const int n = int(items.size());
        if (n == 0) return;
        const int w = std::min(boxW, (width - gap * (n - 1)) / n);
        const int total = n * w + (n - 1) * gap;
        int x = m + (width - total) / 2;
        for (int i : items) {
            rects[std::size_t(i)] = QRect(x, y0, std::max(4, w), swH);
            x += w + gap;
        }
    };
    const int swBoxW = std::max(fm.horizontalAdvance("leaf-g00-r0") + 12, 60);
    if (!spines.empty()) {
        placeRow(spines, y, swBoxW, out.sw);
        y += swH + 3 * gap + extra;
    }
    for (std::size_t p = 0; p < podHosts.size(); ++p) {
        placeRow(podLeaves[p], y, swBoxW, out.sw);
        y += swH + 2 * gap + extra;
        const auto& hosts = podHosts[p];
        const int n = int(hosts.size());
        const int usedCols = std::min(cols, n);
        const int rowW = usedCols * hostW + (usedCols - 1) * gap;
        const int x0 = m + (width - rowW) / 2;
        for (int i = 0; i < n; ++i) {
            const int h = hosts[std::size_t(i)];
            const QRect box(x0 + (i % cols) * (hostW + gap), y + (i / cols) * (hostH + gap), hostW, hostH);
            out.host[std::size_t(h)] = box;
            const auto& nics = topo.hosts[std::size_t(h)].nics;
            for (std::size_t k = 0; k < nics.size(); ++k)
                out.nic[std::size_t(nics[k])] =
                    QRect(box.left() + 4 + int(k) * cell, box.bottom() - cell - 3, cell - 1, cell);
        }
        y += ((n + cols - 1) / cols) * (hostH + gap) + gap;
    }
}

QRect TopologyView::hostRect(int host) const {
    const Layout& l = currentLayout();
    return host >= 0 && host < int(l.host.size()) ? l.host[std::size_t(host)] : QRect();
}
QRect TopologyView::nicRect(int nic) const {
    const Layout& l = currentLayout();
    return nic >= 0 && nic < int(l.nic.size()) ? l.nic[std::size_t(nic)] : QRect();
}

int TopologyView::hostAt(const QPoint& pos) const {
    const Layout& l = currentLayout();
    for (std::size_t i = 0; i < l.host.size(); ++i)
        if (l.host[i].contains(pos)) return int(i);
    return -1;
}
int TopologyView::nicAt(const QPoint& pos) const {
    const Layout& l = currentLayout();
    for (std::size_t i = 0; i < l.nic.size(); ++i)
        if (l.nic[i].contains(pos)) return int(i);
    return -1;
}
int TopologyView::switchAt(const QPoint& pos) const {
    const Layout& l = currentLayout();
    for (std::size_t i = 0; i < l.sw.size(); ++i)
        if (l.sw[i].contains(pos)) return int(i);
    return -1;
}

QColor TopologyView::nicColor(int nic, const std::vector<int>& rankOfNic) const {
    const ViewColors c = ViewColors::from(palette());
    const QColor none = c.dark ? QColor(0x44, 0x47, 0x4d) : QColor(0xe3, 0xe5, 0xe8);
    if (m_colorBy == ColorBy::Job) {
        int j = nic < int(m_jobOfNic.size()) ? m_jobOfNic[std::size_t(nic)] : -1;
        return j < 0 ? none : c.category(j);
    }
    const JobDataPtr& d = m_state->jobData();
    if (!d) return none;
    const int r = nic < int(rankOfNic.size()) ? rankOfNic[std::size_t(nic)] : -1;
    if (r < 0) return none;
    const RankTimeline& rt = d->timeline().ranks[std::size_t(r)];
    return c.category(m_colorBy == ColorBy::DpGroup ? rt.dpGroup : rt.stage);
}

void TopologyView::paint(QPainter& p, const QSize& size) const {
    const ViewColors c = ViewColors::from(palette());
    p.fillRect(QRect(QPoint(0, 0), size), c.background);
    const SessionPtr& s = m_state->session();
    p.setPen(c.mutedText);
    if (!s) {
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, tr("No capture loaded"));
        return;
    }
    const Topology& topo = s->capture.topology;
    if (topo.hosts.empty()) {
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
                   tr("This capture has no topology.json: hosts and switches are unknown."));
        return;
    }
    Layout local;
    const Layout* lp = &m_layout;
    if (size == this->size())
        lp = &currentLayout();
    else {
        layout(size, local);
        lp = &local;
    }
    const Layout& l = *lp;
    QFontMetrics fm(font());
    p.setRenderHint(QPainter::Antialiasing, true);

    // Highlighted NICs: those of the ranks the selection points at, or the selected NIC / host.
    const Selection& sel = m_state->selection();
    std::vector<char> hl(topo.nics.size(), 0);
    const JobDataPtr& d = m_state->jobData();
    if (d)
        for (int r : m_state->highlightedRanks())
            if (int n = d->nicOfRank(r); n >= 0) hl[std::size_t(n)] = 1;
    if (sel.kind == Selection::Kind::Nic && sel.nic >= 0 && sel.nic < int(hl.size())) hl[std::size_t(sel.nic)] = 1;
    if (sel.kind == Selection::Kind::Host && sel.host >= 0 && sel.host < int(topo.hosts.size()))
        for (int n : topo.hosts[std::size_t(sel.host)].nics) hl[std::size_t(n)] = 1;
    std::vector<char> inJob(topo.nics.size(), 0);
    std::vector<int> rankOfNic(topo.nics.size(), -1);
    if (d)
        for (int r = 0; r < d->rankCount(); ++r)
            if (int n = d->nicOfRank(r); n >= 0) {
                inJob[std::size_t(n)] = 1;
                rankOfNic[std::size_t(n)] = r;
            }

    // Links: leaf to spine, NIC to leaf. Faint, except those of the selected job (a little stronger),
    // the highlighted ones and the slow ones (red, on top).
    QColor faint = c.mutedText;
    faint.setAlpha(c.dark ? 60 : 45);
    QColor jobLink = c.mutedText;
    jobLink.setAlpha(c.dark ? 120 : 100);
    for (int i = 0; i < int(topo.switches.size()); ++i) {
        const QRect a = l.sw[std::size_t(i)];
        if (a.isEmpty()) continue;
        for (const std::string& up : topo.switches[std::size_t(i)].uplinks) {
            auto j = topo.switchByName(up);
            if (!j || l.sw[std::size_t(*j)].isEmpty()) continue;
            const QRect b = l.sw[std::size_t(*j)];
            p.setPen(QPen(faint, 1));
            p.drawLine(QPointF(a.center().x(), a.top()), QPointF(b.center().x(), b.bottom() + 1));
        }
    }
    auto nicLink = [&](int n) -> QLineF {
        const Nic& nic = topo.nics[std::size_t(n)];
        const QRect a = l.nic[std::size_t(n)];
        if (a.isEmpty() || nic.switchIndex < 0 || l.sw[std::size_t(nic.switchIndex)].isEmpty()) return {};
        const QRect b = l.sw[std::size_t(nic.switchIndex)];
        return QLineF(QPointF(a.center().x(), a.top()), QPointF(b.center().x(), b.bottom() + 1));
    };
    // Pass 0 faint, 1 the job's and highlighted ones, 2 the slow ones: drawn after the hosts, over the boxes of
    // the hosts in front (a second row's slow link ran behind the first row and seemed to end between hosts).
    auto drawLinks = [&](int pass) {
        for (int n = 0; n < int(topo.nics.size()); ++n) {
            const bool slow = isSlowNic(n);
            const int want = slow ? 2 : hl[std::size_t(n)] || inJob[std::size_t(n)] ? 1 : 0;
            if (want != pass) continue;
            QLineF line = nicLink(n);
            if (line.isNull()) continue;
            if (slow)
                p.setPen(QPen(c.slow, 2.5));
            else if (hl[std::size_t(n)])
                p.setPen(QPen(c.selection, 1.5));
            else
                p.setPen(QPen(inJob[std::size_t(n)] ? jobLink : faint, 1));
            p.drawLine(line);
        }
    };
    drawLinks(0);
    drawLinks(1);
    // Switches.
    for (int i = 0; i < int(topo.switches.size()); ++i) {
        const QRect r = l.sw[std::size_t(i)];
        if (r.isEmpty()) continue;
        const bool slow = isSlowSwitch(i);
        const bool selected = sel.kind == Selection::Kind::Switch && sel.sw == i;
        p.setPen(QPen(slow ? c.slow : selected ? c.selection : c.mutedText, slow || selected ? 2 : 1));
        p.setBrush(slow ? c.slowBand : c.header);
        p.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 3, 3);
        p.setPen(c.headerText);
        p.drawText(
            r, Qt::AlignCenter,
            fm.elidedText(QString::fromStdString(topo.switches[std::size_t(i)].name), Qt::ElideMiddle, r.width() - 4));
    }
    // Hosts and their NIC cells.
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.8));
    for (int h = 0; h < int(topo.hosts.size()); ++h) {
        const QRect r = l.host[std::size_t(h)];
        if (r.isEmpty()) continue;
        const bool selected = sel.kind == Selection::Kind::Host && sel.host == h;
        p.setPen(QPen(selected ? c.selection : c.grid.darker(c.dark ? 60 : 120), selected ? 2 : 1));
        p.setBrush(c.header);
        p.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
        p.setFont(font());
        p.setPen(c.headerText);
        p.drawText(
            QRect(r.left() + 4, r.top() + 2, r.width() - 8, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
            fm.elidedText(QString::fromStdString(topo.hosts[std::size_t(h)].name), Qt::ElideMiddle, r.width() - 8));
        p.setFont(small);
        for (int n : topo.hosts[std::size_t(h)].nics) {
            const QRect cr = l.nic[std::size_t(n)];
            if (cr.isEmpty()) continue;
            const QColor fill = nicColor(n, rankOfNic);
            p.setPen(Qt::NoPen);
            p.setBrush(fill);
            p.drawRect(cr);
            if (l.cell >= 14) {
                const auto& gpus = topo.nics[std::size_t(n)].gpus;
                p.setPen(fill.lightness() > 140 ? QColor(0x20, 0x20, 0x20) : QColor(0xf0, 0xf0, 0xf0));
                QString label = gpus.empty() ? QString("?") : QString::number(gpus.front());
                if (gpus.size() > 1) label += QString("–%1").arg(gpus.back()); // a NIC shared by its GPUs
                p.drawText(cr, Qt::AlignCenter, label);
            }
            if ((m_stragglerNic.size() > std::size_t(n) && m_stragglerNic[std::size_t(n)]) || isSlowNic(n)) {
                p.setPen(QPen(c.slow, 2));
                p.setBrush(Qt::NoBrush);
                p.drawRect(QRectF(cr).adjusted(1, 1, -1, -1));
            }
            if (hl[std::size_t(n)]) {
                p.setPen(QPen(c.selection, 2));
                p.setBrush(Qt::NoBrush);
                p.drawRect(QRectF(cr).adjusted(-1, -1, 1, 1));
            }
        }
    }
    drawLinks(2);
    // Legend.
    p.setFont(font());
    int x = l.legend.left();
    const int sq = fm.height() - 4;
    auto item = [&](const QColor& col, const QString& text, bool line = false) {
        if (line) {
            p.setPen(QPen(col, 2.5));
            p.drawLine(x, l.legend.center().y(), x + sq, l.legend.center().y());
        } else {
            p.setPen(QPen(c.mutedText, 1));
            p.setBrush(col);
            p.drawRect(QRectF(x + 0.5, l.legend.center().y() - sq / 2 + 0.5, sq - 1, sq - 1));
        }
        x += sq + 4;
        p.setPen(c.text);
        p.drawText(QPoint(x, l.legend.center().y() + fm.ascent() / 2 - 1), text);
        x += fm.horizontalAdvance(text) + 12;
    };
    p.setPen(c.mutedText);
    const QString mode = m_colorBy == ColorBy::Job ? tr("GPUs by job:")
        : m_colorBy == ColorBy::DpGroup            ? tr("GPUs of the selected job by DP group:")
                                                   : tr("GPUs of the selected job by PP stage:");
    p.drawText(QPoint(x, l.legend.center().y() + fm.ascent() / 2 - 1), mode);
    x += fm.horizontalAdvance(mode) + 8;
    if (m_colorBy == ColorBy::Job) {
        const auto& jobs = s->report().jobs;
        for (int j = 0; j < int(jobs.size()) && j < 12; ++j)
            item(c.category(j), QString::fromStdString(jobs[std::size_t(j)].id));
    } else if (d) {
        const int count = m_colorBy == ColorBy::DpGroup ? int(d->parallelism() ? d->parallelism()->dpGroups.size() : 0)
                                                        : std::max(1, d->info().pp);
        for (int k = 0; k < std::min(count, 8); ++k) item(c.category(k), QString::number(k));
        if (count > 8) {
            p.setPen(c.text);
            p.drawText(QPoint(x, l.legend.center().y() + fm.ascent() / 2 - 1), tr("… (%1)").arg(count));
            x += fm.horizontalAdvance(tr("… (%1)").arg(count)) + 12;
        }
    }
    item(c.dark ? QColor(0x44, 0x47, 0x4d) : QColor(0xe3, 0xe5, 0xe8), tr("idle"));
    item(c.slow, tr("finding (slow rank, link or switch)"), true);
}

void TopologyView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, size());
}

void TopologyView::renderExport(QPainter& painter, const QSize& size, bool) const { paint(painter, size); }

QString TopologyView::exportTitle() const {
    const SessionPtr& s = m_state->session();
    if (!s) return tr("Topology");
    const Topology& t = s->capture.topology;
    QString title = tr("%1 — topology: %2 hosts, %3 GPUs on %4 NICs, %5 switches")
                        .arg(QFileInfo(s->source).fileName())
                        .arg(t.hosts.size())
                        .arg(t.gpuCount())
                        .arg(t.nics.size())
                        .arg(t.switches.size());
    if (m_colorBy != ColorBy::Job && m_state->jobData()) title += " — " + m_state->jobData()->title();
    // What is drawn in red, by name: a ticket's picture says which link, switch or GPU it points at.
    auto nicName = [&](int n) { return QString::fromStdString(t.rankLabel(t.nics[std::size_t(n)].ip)); };
    QStringList red;
    for (int n = 0; n < int(m_slowNic.size()); ++n)
        if (m_slowNic[std::size_t(n)]) {
            const std::string& sw = t.nics[std::size_t(n)].switchName;
            red << tr("slow link %1").arg(nicName(n)) + (sw.empty() ? QString() : " ↔ " + QString::fromStdString(sw));
        }
    for (int i = 0; i < int(m_slowSw.size()); ++i)
        if (m_slowSw[std::size_t(i)])
            red << tr("slow switch %1").arg(QString::fromStdString(t.switches[std::size_t(i)].name));
    for (const auto& [n, gpus] : m_stragglers)
        red << (gpus > 1 ? tr("slow rank %1 and %2 more of its TP group").arg(nicName(n)).arg(gpus - 1)
                         : tr("slow rank %1").arg(nicName(n)));
    if (!red.isEmpty()) title += tr(" — in red: %1").arg(listWithMore(red, 4));
    return title;
}

void TopologyView::mousePressEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    if (int n = nicAt(pos); n >= 0)
        m_state->select(Selection::ofNic(n), true);
    else if (int h = hostAt(pos); h >= 0)
        m_state->select(Selection::ofHost(h), true);
    else if (int sw = switchAt(pos); sw >= 0)
        m_state->select(Selection::ofSwitch(sw), true);
    else
        m_state->clearSelection();
}

bool TopologyView::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip) return QWidget::event(event);
    auto* he = static_cast<QHelpEvent*>(event);
    const SessionPtr& s = m_state->session();
    if (!s) return true;
    const Topology& topo = s->capture.topology;
    QString text;
    const auto& jobs = s->report().jobs;
    if (int n = nicAt(he->pos()); n >= 0) {
        const Nic& nic = topo.nics[std::size_t(n)];
        QStringList gpus;
        for (int g : nic.gpus) gpus << QString::number(g);
        text = tr("<b>%1</b> GPU %2<br>NIC %3, rail %4, leaf %5")
                   .arg(QString::fromStdString(topo.hosts[std::size_t(nic.host)].name), gpus.join(", "),
                        QString::fromStdString(nic.ip.toString()))
                   .arg(nic.rail)
                   .arg(QString::fromStdString(nic.switchName));
        int j = m_jobOfNic[std::size_t(n)];
        text += j >= 0 ? tr("<br>job %1").arg(QString::fromStdString(jobs[std::size_t(j)].id)) : tr("<br>no job");
        if (isSlowNic(n)) text += tr("<br><span style='color:#d6282f'>slow link</span>");
    } else if (int h = hostAt(he->pos()); h >= 0) {
        std::set<int> js;
        for (int k : topo.hosts[std::size_t(h)].nics)
            if (m_jobOfNic[std::size_t(k)] >= 0) js.insert(m_jobOfNic[std::size_t(k)]);
        QStringList names;
        for (int j : js) names << QString::fromStdString(jobs[std::size_t(j)].id);
        int gpus = 0;
        for (int k : topo.hosts[std::size_t(h)].nics) gpus += int(topo.nics[std::size_t(k)].gpus.size());
        text = tr("<b>%1</b><br>%2 GPUs on %3 NICs · jobs: %4<br>click to select its ranks")
                   .arg(QString::fromStdString(topo.hosts[std::size_t(h)].name))
                   .arg(gpus)
                   .arg(topo.hosts[std::size_t(h)].nics.size())
                   .arg(names.isEmpty() ? tr("none") : names.join(", "));
    } else if (int sw = switchAt(he->pos()); sw >= 0) {
        const Switch& w = topo.switches[std::size_t(sw)];
        text = tr("<b>%1</b> (%2)").arg(QString::fromStdString(w.name), QString::fromStdString(w.tier));
        if (!w.uplinks.empty()) text += tr("<br>%1 uplinks").arg(w.uplinks.size());
        if (isSlowSwitch(sw)) text += tr("<br><span style='color:#d6282f'>slow switch</span>");
    }
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(he->globalPos(), text, this);
    return true;
}

} // namespace prism::ui
