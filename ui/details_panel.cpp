#include "details_panel.h"

#include "view_style.h"

#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>

namespace prism::ui {

namespace {

// Colour of labels, from the palette when the panel refreshes (rich text knows no palette roles).
QString g_muted = "#707070";

QString esc(const QString& s) { return s.toHtmlEscaped(); }
QString q(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

// A two-column table of label / value rows.
class Table {
public:
    Table& row(const QString& label, const QString& value) {
        m_html += QString("<tr><td style='padding-right:10px; color:%3'>%1</td><td>%2</td></tr>")
                      .arg(esc(label), value, g_muted);
        return *this;
    }
    QString html() const { return "<table cellspacing='0' cellpadding='1'>" + m_html + "</table>"; }

private:
    QString m_html;
};

QString heading(const QString& text) { return QString("<h3 style='margin:4px 0'>%1</h3>").arg(esc(text)); }
QString percent(std::int64_t part, std::int64_t total) {
    return total > 0 ? QString(" (%1%)").arg(100.0 * double(part) / double(total), 0, 'f', 1) : QString();
}
QString relTime(const JobData& d, std::int64_t t) {
    const std::int64_t origin = d.timeline().endNs > d.timeline().startNs ? d.timeline().startNs : d.info().startNs;
    return QString("+%1").arg(formatNsAtStep(t - origin, 1000));
}
QString splitRows(Table& t, const TimeSplit& s) {
    t.row(QObject::tr("Compute"), formatNs(s.compute) + percent(s.compute, s.total()));
    t.row(QObject::tr("Communication"), formatNs(s.comm) + percent(s.comm, s.total()));
    t.row(QObject::tr("Waiting"), formatNs(s.wait) + percent(s.wait, s.total()));
    return {};
}

} // namespace

DetailsPanel::DetailsPanel(ViewState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    setObjectName("detailsPanel");
    m_browser = new QTextBrowser(this);
    m_browser->setObjectName("detailsText");
    m_browser->setOpenLinks(false);
    m_browser->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_browser);
    connect(m_state, &ViewState::jobChanged, this, &DetailsPanel::refresh);
    connect(m_state, &ViewState::sessionChanged, this, &DetailsPanel::refresh);
    connect(m_state, &ViewState::selectionChanged, this, &DetailsPanel::refresh);
    refresh();
}

QString DetailsPanel::text() const { return m_browser->toPlainText(); }

void DetailsPanel::refresh() {
    const JobDataPtr& d = m_state->jobData();
    const Selection& s = m_state->selection();
    g_muted = palette().color(QPalette::PlaceholderText).name();
    QString html;
    if (!m_state->session()) {
        html = tr("<p>No capture loaded.</p>");
    } else {
        switch (s.kind) {
        case Selection::Kind::Step: html = d ? stepHtml(*d, s.step) : QString(); break;
        case Selection::Kind::Rank: html = d ? rankHtml(*d, s.rank) : QString(); break;
        case Selection::Kind::Segment: html = d ? segmentHtml(*d, s.rank, s.segment) : QString(); break;
        case Selection::Kind::Host: html = hostHtml(s.host); break;
        case Selection::Kind::Nic: html = nicHtml(s.nic); break;
        case Selection::Kind::Switch: html = switchHtml(s.sw); break;
        case Selection::Kind::Finding: html = d ? findingHtml(*d, s.finding) : QString(); break;
        case Selection::Kind::None: html = d ? jobHtml(*d) : tr("<p>No job found in this capture.</p>"); break;
        }
    }
    m_html = html;
    m_browser->setHtml(html);
}

QString DetailsPanel::jobHtml(const JobData& d) const {
    const JobInfo& j = d.info();
    Table t;
    t.row(tr("GPUs"), QString::number(j.gpuTotal()));
    if (!j.restartOf.empty()) t.row(tr("Restart of"), esc(QString::fromStdString(j.restartOf)));
    t.row(tr("Hosts"), QString::number(j.hosts.size()));
    t.row(tr("TP × PP × DP"), QString("%1 × %2 × %3").arg(j.tp).arg(j.pp).arg(j.dp));
    t.row(tr("Ranks (NICs)"), QString::number(d.rankCount()));
    t.row(tr("Segments"), QString::number(d.timeline().segmentCount()));
    if (j.endNs > j.startNs) {
        t.row(tr("Start"), esc(formatWallClock(j.startNs)));
        t.row(tr("Duration"), formatNs(j.endNs - j.startNs));
    }
    t.row(tr("Steps"), d.steps().empty() ? tr("none detected") : QString::number(d.steps().size()));
    if (!d.steps().empty()) {
        t.row(tr("Median step"), formatNs(d.medianStepNs()));
        t.row(tr("Slow steps"), QString::number(d.slowStepCount()));
    }
    t.row(tr("Findings"), QString::number(j.findings.size()));
    QString html = heading(tr("Job %1").arg(QString::fromStdString(j.id))) + t.html();
    std::vector<std::string> notes = j.notes;
    if (!notes.empty()) {
        html += "<p><b>" + tr("Notes") + "</b></p><ul style='margin-left:-20px'>";
        for (const auto& n : notes) html += "<li>" + q(n) + "</li>";
        html += "</ul>";
    }
    html += "<p style='color:" + g_muted + "'>" +
        tr("Click a step, a rank or a segment in the timeline, a point in the step chart or a host in the topology "
           "to see its numbers here.") +
        "</p>";
    return html;
}

QString DetailsPanel::stepHtml(const JobData& d, int step) const {
    const auto& st = d.steps();
    if (step < 0 || step >= int(st.size())) return {};
    const StepInfo& s = st[std::size_t(step)];
    Table t;
    t.row(tr("Duration"), "<b>" + formatNs(s.durationNs()) + "</b>");
    if (d.medianStepNs() > 0) {
        const double rel = double(s.durationNs()) / double(d.medianStepNs()) - 1.0;
        t.row(tr("vs. median"),
              QString("%1%2% (median %3)")
                  .arg(rel >= 0 ? "+" : "")
                  .arg(rel * 100, 0, 'f', 1)
                  .arg(formatNs(d.medianStepNs())));
    }
    t.row(tr("Slow"), s.slow ? QString("<span style='color:#d6282f'><b>%1</b></span>").arg(tr("yes")) : tr("no"));
    t.row(tr("Start"), relTime(d, s.startNs));
    t.row(tr("End"), relTime(d, s.endNs));
    t.row(tr("Wall clock"), esc(formatWallClock(s.startNs)));
    // Across ranks: mean split, and the ranks that computed and waited the longest.
    TimeSplit sum;
    int maxCompute = -1, maxWait = -1;
    std::int64_t bestC = -1, bestW = -1;
    for (int r = 0; r < d.rankCount(); ++r) {
        TimeSplit x = d.splitInStep(r, step);
        sum.compute += x.compute;
        sum.comm += x.comm;
        sum.wait += x.wait;
        if (x.compute > bestC) {
            bestC = x.compute;
            maxCompute = r;
        }
        if (x.wait > bestW) {
            bestW = x.wait;
            maxWait = r;
        }
    }
    const int n = std::max(1, d.rankCount());
    TimeSplit mean{sum.compute / n, sum.comm / n, sum.wait / n};
    Table a;
    splitRows(a, mean);
    if (maxCompute >= 0)
        a.row(tr("Longest compute"), QString("%1 (%2)").arg(esc(d.rankLabel(maxCompute)), formatNs(bestC)));
    if (maxWait >= 0 && bestW > 0)
        a.row(tr("Longest waiting"), QString("%1 (%2)").arg(esc(d.rankLabel(maxWait)), formatNs(bestW)));
    QString html =
        heading(tr("Step %1").arg(s.index)) + t.html() + "<p><b>" + tr("Per rank, mean") + "</b></p>" + a.html();
    QStringList fs;
    for (int f = 0; f < d.findingCount(); ++f)
        if (d.place(f).firstStep <= step && step <= d.place(f).lastStep)
            fs << q(d.info().findings[std::size_t(f)].kind) + " — " + esc(d.place(f).where);
    if (!fs.isEmpty()) html += "<p><b>" + tr("Findings in this step") + "</b><br>" + fs.join("<br>") + "</p>";
    return html;
}

QString DetailsPanel::rankHtml(const JobData& d, int rank) const {
    if (rank < 0 || rank >= d.rankCount()) return {};
    const RankTimeline& rt = d.timeline().ranks[std::size_t(rank)];
    Table t;
    t.row(tr("Address"), q(rt.ip));
    const int nic = d.nicOfRank(rank);
    if (nic >= 0) {
        const Nic& n = d.topology().nics[std::size_t(nic)];
        QStringList gpus;
        for (int g : n.gpus) gpus << QString::number(g);
        t.row(tr("Host"), q(d.topology().hosts[std::size_t(n.host)].name));
        t.row(tr("GPU"), gpus.join(", "));
        t.row(tr("Rail / leaf"), QString("%1 / %2").arg(n.rail).arg(q(n.switchName)));
    }
    t.row(tr("PP stage"), QString::number(rt.stage));
    t.row(tr("DP group"), QString::number(rt.dpGroup));
    // PP neighbours from the chains.
    if (const ParallelismResult* p = d.parallelism()) {
        for (const auto& chain : p->ppChains) {
            auto it = std::find(chain.begin(), chain.end(), rt.nic);
            if (it == chain.end()) continue;
            auto label = [&](EndpointId e) {
                for (int r = 0; r < d.rankCount(); ++r)
                    if (d.timeline().ranks[std::size_t(r)].nic == e) return d.rankLabel(r);
                return QString("?");
            };
            if (it != chain.begin()) t.row(tr("Previous stage"), esc(label(*(it - 1))));
            if (it + 1 != chain.end()) t.row(tr("Next stage"), esc(label(*(it + 1))));
        }
    }
    t.row(tr("Segments"), QString::number(rt.segmentCount()));
    t.row(tr("Traffic"), formatBytesQ(d.bytesOfRank(rank)));
    Table s;
    splitRows(s, d.jobSplit(rank));
    QString title = tr("Rank %1").arg(d.rankLabel(rank));
    QString html = heading(title);
    if (d.isStraggler(rank)) html += "<p style='color:#d6282f'><b>" + tr("Straggler") + "</b></p>";
    html += t.html() + "<p><b>" + tr("Whole job") + "</b></p>" + s.html();
    QStringList fs;
    for (int f : d.findingsOfRank(rank)) {
        const Finding& fd = d.info().findings[std::size_t(f)];
        fs << QString("%1 — steps %2–%3: %4").arg(q(fd.kind)).arg(fd.firstStep).arg(fd.lastStep).arg(q(fd.message));
    }
    if (!fs.isEmpty()) html += "<p><b>" + tr("Findings") + "</b><br>" + fs.join("<br>") + "</p>";
    return html;
}

QString DetailsPanel::segmentHtml(const JobData& d, int rank, int segment) const {
    if (rank < 0 || rank >= d.rankCount()) return {};
    const RankTimeline& rt = d.timeline().ranks[std::size_t(rank)];
    if (segment < 0 || std::size_t(segment) >= rt.segmentCount()) return rankHtml(d, rank);
    const Segment s = rt.segment(std::size_t(segment));
    Table t;
    t.row(tr("Rank"), esc(d.rankLabel(rank)));
    if (s.peer < std::uint32_t(d.rankCount()))
        t.row(s.kind == SegmentKind::PpRecv       ? tr("From")
                  : s.kind == SegmentKind::PpSend ? tr("To")
                                                  : tr("Peer"),
              esc(d.rankLabel(int(s.peer))));
    t.row(tr("Duration"), "<b>" + formatNs(s.endNs - s.startNs) + "</b>");
    t.row(tr("Start"), relTime(d, s.startNs));
    t.row(tr("End"), relTime(d, s.endNs));
    if (s.bytes) {
        t.row(tr("Bytes"), formatBytesQ(s.bytes));
        t.row(tr("Throughput"), formatRate(s.bytes, s.endNs - s.startNs));
    }
    if (const int st = d.timeline().stepAt(s.startNs); st >= 0 && std::size_t(st) < d.steps().size())
        t.row(tr("Step"), QString::number(d.steps()[std::size_t(st)].index));
    return heading(QString::fromUtf8(segmentKindName(s.kind))) + t.html() + "<hr>" + rankHtml(d, rank);
}

QString DetailsPanel::hostHtml(int host) const {
    const SessionPtr& s = m_state->session();
    if (!s || host < 0 || host >= int(s->capture.topology.hosts.size())) return {};
    const Topology& topo = s->capture.topology;
    const Host& h = topo.hosts[std::size_t(host)];
    Table t;
    t.row(tr("NICs"), QString::number(h.nics.size()));
    int gpus = 0;
    for (int n : h.nics) gpus += int(topo.nics[std::size_t(n)].gpus.size());
    t.row(tr("GPUs"), QString::number(gpus));
    QString html = heading(tr("Host %1").arg(QString::fromStdString(h.name))) + t.html();
    if (const JobDataPtr& d = m_state->jobData()) {
        auto ranks = d->ranksOfHost(host);
        html += "<p><b>" +
            tr("Ranks of %1 on this host: %2").arg(QString::fromStdString(d->info().id)).arg(ranks.size()) + "</b><br>";
        QStringList names;
        for (int r : ranks) {
            const TimeSplit& sp = d->jobSplit(r);
            names << QString("%1 — compute %2%3")
                         .arg(esc(d->rankLabel(r)), formatNs(sp.compute), percent(sp.compute, sp.total()));
        }
        html += names.join("<br>") + "</p>";
    }
    return html;
}

QString DetailsPanel::nicHtml(int nic) const {
    const SessionPtr& s = m_state->session();
    if (!s || nic < 0 || nic >= int(s->capture.topology.nics.size())) return {};
    const Topology& topo = s->capture.topology;
    const Nic& n = topo.nics[std::size_t(nic)];
    Table t;
    t.row(tr("Host"), q(topo.hosts[std::size_t(n.host)].name));
    QStringList gpus;
    for (int g : n.gpus) gpus << QString::number(g);
    t.row(tr("GPU"), gpus.join(", "));
    t.row(tr("Rail"), QString::number(n.rail));
    t.row(tr("Leaf switch"), q(n.switchName));
    QString html = heading(tr("NIC %1").arg(QString::fromStdString(n.ip.toString()))) + t.html();
    if (const JobDataPtr& d = m_state->jobData()) {
        for (int r = 0; r < d->rankCount(); ++r) {
            if (d->nicOfRank(r) != nic) continue;
            html += "<hr>" + rankHtml(*d, r);
            break;
        }
    }
    return html;
}

QString DetailsPanel::switchHtml(int sw) const {
    const SessionPtr& s = m_state->session();
    if (!s || sw < 0 || sw >= int(s->capture.topology.switches.size())) return {};
    const Topology& topo = s->capture.topology;
    const Switch& w = topo.switches[std::size_t(sw)];
    int cabled = 0;
    for (const Nic& n : topo.nics) cabled += n.switchIndex == sw ? 1 : 0;
    Table t;
    t.row(tr("Tier"), q(w.tier));
    t.row(tr("NICs cabled"), QString::number(cabled));
    QStringList up;
    for (const auto& u : w.uplinks) up << q(u);
    t.row(tr("Uplinks"), up.isEmpty() ? tr("none") : up.join(", "));
    return heading(tr("Switch %1").arg(QString::fromStdString(w.name))) + t.html();
}

QString DetailsPanel::findingHtml(const JobData& d, int finding) const {
    if (finding < 0 || finding >= d.findingCount()) return {};
    const Finding& f = d.info().findings[std::size_t(finding)];
    const FindingPlace& p = d.place(finding);
    Table t;
    t.row(tr("Where"), esc(p.where));
    t.row(tr("Steps"),
          f.firstStep == f.lastStep ? QString::number(f.firstStep)
                                    : QString("%1 – %2").arg(f.firstStep).arg(f.lastStep));
    if (p.endNs > p.startNs)
        t.row(tr("Time"),
              QString("%1 … %2 (%3)").arg(relTime(d, p.startNs), relTime(d, p.endNs), formatNs(p.endNs - p.startNs)));
    t.row(tr("Score"), QString::number(f.score, 'g', 4));
    if (!p.ranks.empty()) {
        QStringList names;
        for (std::size_t i = 0; i < p.ranks.size() && i < 16; ++i) names << esc(d.rankLabel(p.ranks[i]));
        if (p.ranks.size() > 16) names << tr("… %1 in all").arg(p.ranks.size());
        t.row(tr("Ranks"), names.join(", "));
    }
    // The numbers behind the finding ("step_ms" → "step: 205.3 ms", "slow_records_share" → "slow records: 100.0 %").
    Table ev;
    for (const auto& [name, value] : f.evidence) {
        QString label = QString::fromStdString(name);
        QString unit;
        for (const char* u : {"_ms", "_us", "_ns", "_s", "_gbps", "_mbps", "_pct", "_x", "_share"}) {
            if (!label.endsWith(u)) continue;
            unit = label.mid(label.lastIndexOf('_') + 1);
            label.chop(unit.size() + 1);
            break;
        }
        label.replace('_', ' ');
        const QString shown = unit == "ms" ? formatNs(std::int64_t(value * 1e6))
            : unit == "us"                 ? formatNs(std::int64_t(value * 1e3))
            : unit == "ns"                 ? formatNs(std::int64_t(value))
            : unit == "s"                  ? formatNs(std::int64_t(value * 1e9))
            : unit == "pct"                ? QString::number(value, 'f', 1) + " %"
            : unit == "x"                  ? QString::number(value, 'f', 2) + "×"
            : unit == "share"              ? QString::number(value * 100, 'f', 1) + " %" // a fraction, 1 = all
            : unit.isEmpty()
            ? QString::number(value, 'g', 4)
            : QString::number(value, 'g', 4) + " " + unit.replace("gbps", "Gb/s").replace("mbps", "Mb/s");
        ev.row(label, shown);
    }
    QString html = heading(QString::fromStdString(f.kind).replace('_', ' ')) + t.html();
    if (!f.message.empty()) html += "<p>" + q(f.message) + "</p>";
    if (!f.evidence.empty()) html += "<p><b>" + tr("Evidence") + "</b></p>" + ev.html();
    return html;
}

} // namespace prism::ui
