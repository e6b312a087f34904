// TimelineView: the job shown, layout of the rows, scrolling, zooming to steps and findings, revealing the
// selection, descriptions. Input (mouse, keys, search) is in timeline_input.cpp, painting in timeline_paint.cpp.
#include "timeline_view.h"

#include <QAction>
#include <QCompleter>
#include <QEvent>
#include <QFileInfo>
#include <QLineEdit>
#include <QScrollBar>
#include <algorithm>
#include <cmath>

namespace prism::ui {

namespace {
qint64 groupKey(int stage, int group) { return (qint64(stage) << 32) | qint64(std::uint32_t(group + 1)); }
} // namespace

TimelineView::TimelineView(ViewState* state, QWidget* parent)
    : QWidget(parent), m_state(state), m_zoom(state ? state->zoom() : new ZoomControl(this)) {
    setObjectName("timelineView");
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(320, 160);
    m_colors = ViewColors::from(palette());

    m_vbar = new QScrollBar(Qt::Vertical, this);
    m_vbar->setObjectName("timelineScrollBar");
    connect(m_vbar, &QScrollBar::valueChanged, this, [this](int v) {
        if (v != m_scrollY) setScroll(v);
    });

    m_search = new QLineEdit(this);
    m_search->setObjectName("timelineSearch");
    m_search->setPlaceholderText(tr("Rank, host, address or step…"));
    m_search->setClearButtonEnabled(true);
    m_search->hide();
    connect(m_search, &QLineEdit::returnPressed, this, [this] {
        bool found = search(m_search->text());
        QPalette pal = m_search->palette();
        pal.setColor(QPalette::Base,
                     found || m_search->text().isEmpty() ? palette().color(QPalette::Base)
                                                         : QColor(m_colors.dark ? 0x6b2a2d : 0xfbd5d6));
        m_search->setPalette(pal);
    });
    auto* escape = new QAction(m_search);
    escape->setShortcut(Qt::Key_Escape);
    escape->setShortcutContext(Qt::WidgetShortcut);
    connect(escape, &QAction::triggered, this, [this] {
        m_search->hide();
        setFocus();
    });
    m_search->addAction(escape);

    if (m_state) {
        connect(m_state, &ViewState::jobChanged, this, [this] { setJobData(m_state->jobData()); });
        connect(m_state, &ViewState::selectionChanged, this, &TimelineView::onSelectionChanged);
    }
    connect(m_zoom, &ZoomControl::rangeChanged, this, qOverload<>(&QWidget::update));
}

TimelineView::~TimelineView() = default;

void TimelineView::setJobData(const JobDataPtr& data) {
    m_data = data;
    m_collapsed.clear();
    m_index.reset();
    m_hoverRank = m_hoverSegment = -1;
    m_searchHit = -1;
    if (m_data) {
        auto& lod = m_data->session().lod; // mutable: indices built here are kept
        const auto j = std::size_t(m_data->jobIndex());
        if (j < lod.size() && lod[j] && lod[j]->timeline() == &m_data->timeline()) {
            m_index = lod[j];
        } else {
            auto index = std::make_shared<TimelineIndex>();
            index->build(m_data->timeline());
            m_index = index;
            if (j < lod.size()) lod[j] = std::move(index); // kept for the next time this job is shown
        }
        QStringList words;
        for (int r = 0; r < m_data->rankCount(); ++r) words << m_data->rankLabel(r);
        for (const Host& h : m_data->topology().hosts) words << QString::fromStdString(h.name);
        words.removeDuplicates();
        auto* completer = new QCompleter(words, m_search);
        completer->setCaseSensitivity(Qt::CaseInsensitive);
        completer->setFilterMode(Qt::MatchContains);
        m_search->setCompleter(completer);
    }
    // Rank labels decide the label column width.
    QFontMetrics fm(font());
    int w = fm.horizontalAdvance(tr("▾ DP group 000 · 0000 ranks")) + 30;
    if (m_data)
        for (int r = 0; r < m_data->rankCount(); ++r) w = std::max(w, fm.horizontalAdvance(m_data->rankLabel(r)) + 44);
    m_labelWidth = std::clamp(w, 120, 320);
    rebuildLayout();
    if (!m_state) m_zoom->reset(jobStart(), jobEnd()); // with a ViewState, it resets the shared range
    setScroll(0);
    invalidate();
}

// ---- layout ---------------------------------------------------------------------------------------------

void TimelineView::rebuildLayout() {
    m_rows.clear();
    m_rowOfRank.assign(m_data ? std::size_t(m_data->rankCount()) : 0, -1);
    m_contentHeight = 0;
    if (!m_data) {
        updateScrollBar();
        return;
    }
    const auto& ranks = m_data->timeline().ranks;
    const int n = int(ranks.size());
    const int rowH = m_rowHeight;
    const int headerH = rowH >= 12 ? rowH + 2 : std::max(3, rowH);
    int maxStage = 0;
    for (const auto& r : ranks) maxStage = std::max(maxStage, r.stage);
    const bool stageHeaders = maxStage > 0;
    int y = 0;
    auto add = [&](Row row) {
        row.y = y;
        y += row.h;
        m_rows.push_back(row);
    };
    for (int a = 0; a < n;) {
        int stage = ranks[std::size_t(a)].stage;
        int b = a;
        while (b < n && ranks[std::size_t(b)].stage == stage) ++b;
        bool stageCollapsed = stageHeaders && m_collapsed.contains(groupKey(stage, -1));
        if (stageHeaders) add({Row::Stage, stage, -1, a, b, 0, headerH, stageCollapsed});
        if (!stageCollapsed) {
            // DP groups inside the stage: headers only when the stage holds several groups of several ranks.
            int groups = 0;
            bool multi = false;
            for (int i = a; i < b;) {
                int j = i;
                while (j < b && ranks[std::size_t(j)].dpGroup == ranks[std::size_t(i)].dpGroup) ++j;
                ++groups;
                multi |= j - i > 1;
                i = j;
            }
            const bool groupHeaders = groups > 1 && multi;
            for (int i = a; i < b;) {
                int g = ranks[std::size_t(i)].dpGroup;
                int j = i;
                while (j < b && ranks[std::size_t(j)].dpGroup == g) ++j;
                bool collapsed = groupHeaders && m_collapsed.contains(groupKey(stage, g));
                if (groupHeaders) add({Row::Group, stage, g, i, j, 0, headerH, collapsed});
                if (!collapsed)
                    for (int r = i; r < j; ++r) {
                        m_rowOfRank[std::size_t(r)] = int(m_rows.size());
                        add({Row::Rank, stage, g, r, r + 1, 0, rowH, false});
                    }
                i = j;
            }
        }
        a = b;
    }
    m_contentHeight = y;
    ++m_layoutVersion;
    updateScrollBar();
}

void TimelineView::setRowHeight(int px) {
    px = std::clamp(px, 1, 40);
    if (px == m_rowHeight) return;
    // Keep the row at the top of the view in place.
    int topRow = rowIndexAtY(plotRect().top());
    int firstRank = topRow >= 0 ? m_rows[std::size_t(topRow)].first : 0;
    m_rowHeight = px;
    rebuildLayout();
    if (firstRank >= 0 && firstRank < int(m_rowOfRank.size()) && m_rowOfRank[std::size_t(firstRank)] >= 0)
        setScroll(m_rows[std::size_t(m_rowOfRank[std::size_t(firstRank)])].y);
    invalidate();
}

void TimelineView::fitRows() {
    if (!m_data || m_rows.empty()) return;
    const int avail = plotRect().height();
    int best = 1;
    for (int h = 24; h >= 1; --h) {
        m_rowHeight = h;
        rebuildLayout();
        if (m_contentHeight <= avail) {
            best = h;
            break;
        }
    }
    m_rowHeight = best;
    rebuildLayout();
    setScroll(0);
    invalidate();
}

void TimelineView::setGroupCollapsed(int stage, int group, bool collapsed) {
    qint64 key = groupKey(stage, group);
    if (collapsed == m_collapsed.contains(key)) return;
    if (collapsed)
        m_collapsed.insert(key);
    else
        m_collapsed.remove(key);
    rebuildLayout();
    invalidate();
}

void TimelineView::setAllCollapsed(bool collapsed) {
    m_collapsed.clear();
    if (collapsed && m_data) {
        // Collapse the outermost level that has headers.
        bool stages = std::any_of(m_rows.begin(), m_rows.end(), [](const Row& r) { return r.type == Row::Stage; });
        for (const auto& r : m_data->timeline().ranks)
            m_collapsed.insert(stages ? groupKey(r.stage, -1) : groupKey(r.stage, r.dpGroup));
    }
    rebuildLayout();
    setScroll(std::min(m_scrollY, std::max(0, m_contentHeight - plotRect().height())));
    invalidate();
}

bool TimelineView::isRankVisible(int rank) const {
    return rank >= 0 && rank < int(m_rowOfRank.size()) && m_rowOfRank[std::size_t(rank)] >= 0;
}

int TimelineView::rowIndexAtY(int y) const {
    const QRect plot = plotRect();
    if (y < plot.top() || y > plot.bottom() || m_rows.empty()) return -1;
    const int cy = y - plot.top() + m_scrollY;
    auto it = std::upper_bound(m_rows.begin(), m_rows.end(), cy, [](int v, const Row& r) { return v < r.y; });
    if (it == m_rows.begin()) return -1;
    --it;
    if (cy >= it->y + it->h) return -1;
    return int(it - m_rows.begin());
}

int TimelineView::rankAtY(int y) const {
    int i = rowIndexAtY(y);
    if (i < 0 || m_rows[std::size_t(i)].type != Row::Rank) return -1;
    return m_rows[std::size_t(i)].first;
}

int TimelineView::yOfRank(int rank) const {
    if (!isRankVisible(rank)) return -1;
    const Row& r = m_rows[std::size_t(m_rowOfRank[std::size_t(rank)])];
    return plotRect().top() + r.y - m_scrollY + r.h / 2;
}

void TimelineView::updateScrollBar() {
    const int page = std::max(1, plotRect().height());
    const int maxScroll = std::max(0, m_contentHeight - page);
    m_vbar->blockSignals(true);
    m_vbar->setRange(0, maxScroll);
    m_vbar->setPageStep(page);
    m_vbar->setSingleStep(std::max(1, m_rowHeight));
    m_vbar->setValue(std::min(m_scrollY, maxScroll));
    m_vbar->blockSignals(false);
    m_vbar->setVisible(maxScroll > 0);
    if (m_scrollY > maxScroll) m_scrollY = maxScroll;
}

void TimelineView::setScroll(int y) {
    const int maxScroll = std::max(0, m_contentHeight - plotRect().height());
    y = std::clamp(y, 0, maxScroll);
    m_scrollY = y;
    m_vbar->blockSignals(true);
    m_vbar->setValue(y);
    m_vbar->blockSignals(false);
    update();
}

void TimelineView::invalidate() {
    m_cacheKey.clear();
    update();
}

// ---- time range -----------------------------------------------------------------------------------------

void TimelineView::zoomAt(double x, double factor) {
    if (factor <= 0) return;
    const QRect plot = plotRect();
    x = std::clamp(x, double(plot.left()), double(plot.right() + 1));
    const double frac = (x - plot.left()) / std::max(1, plot.width());
    const std::int64_t anchor = timeAtX(x);
    const std::int64_t span = m_zoom->clampSpan(std::int64_t(double(m_zoom->span()) / factor));
    const std::int64_t t0 = anchor - std::int64_t(frac * double(span));
    setRange(t0, t0 + span, false);
}

void TimelineView::panBy(double dxPx) {
    const double nsPerPx = double(m_zoom->span()) / std::max(1, plotRect().width());
    const std::int64_t d = std::int64_t(dxPx * nsPerPx);
    setRange(rangeStart() + d, rangeEnd() + d, false);
}

void TimelineView::zoomToSteps(int first, int last) {
    if (!m_data) return;
    const auto& st = m_data->steps();
    if (st.empty()) return;
    first = std::clamp(first, 0, int(st.size()) - 1);
    last = std::clamp(last, first, int(st.size()) - 1);
    const std::int64_t a = st[std::size_t(first)].startNs, b = st[std::size_t(last)].endNs;
    const std::int64_t margin = std::max<std::int64_t>(1, (b - a) / 20);
    setRange(a - margin, b + margin, true);
}

void TimelineView::zoomToFinding(int finding) {
    if (!m_data || finding < 0 || finding >= m_data->findingCount()) return;
    const FindingPlace& p = m_data->place(finding);
    const std::int64_t margin = std::max<std::int64_t>(1, (p.endNs - p.startNs) / 20);
    setRange(p.startNs - margin, p.endNs + margin, true);
    if (!p.ranks.empty()) revealRank(p.ranks.front());
}

void TimelineView::revealRank(int rank) {
    if (!m_data || rank < 0 || rank >= m_data->rankCount()) return;
    if (!isRankVisible(rank)) {
        const auto& r = m_data->timeline().ranks[std::size_t(rank)];
        m_collapsed.remove(groupKey(r.stage, -1));
        m_collapsed.remove(groupKey(r.stage, r.dpGroup));
        rebuildLayout();
        invalidate();
    }
    const Row& row = m_rows[std::size_t(m_rowOfRank[std::size_t(rank)])];
    const int page = plotRect().height();
    if (row.y < m_scrollY || row.y + row.h > m_scrollY + page) setScroll(row.y - page / 3);
}

int TimelineView::revealFindingRank() {
    if (!m_data) return -1;
    for (int i = 0; i < m_data->findingCount(); ++i)
        if (const auto& ranks = m_data->place(i).ranks; !ranks.empty()) {
            revealRank(ranks.front());
            return ranks.front();
        }
    return -1;
}

double TimelineView::xOfTime(std::int64_t t) const {
    const QRect plot = plotRect();
    return plot.left() +
           double(t - rangeStart()) * double(plot.width()) / double(std::max<std::int64_t>(1, m_zoom->span()));
}

std::int64_t TimelineView::timeAtX(double x) const {
    const QRect plot = plotRect();
    return rangeStart() + std::int64_t((x - plot.left()) * double(m_zoom->span()) / double(std::max(1, plot.width())));
}

int TimelineView::stepAtX(double x) const {
    if (!m_data) return -1;
    const std::int64_t t = timeAtX(x);
    const auto& st = m_data->steps();
    auto it = std::upper_bound(st.begin(), st.end(), t, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; });
    if (it == st.end() || t < it->startNs) return -1;
    return int(it - st.begin());
}

void TimelineView::setAbsoluteTime(bool absolute) {
    m_absolute = absolute;
    update();
}

// ---- selection ------------------------------------------------------------------------------------------

void TimelineView::onSelectionChanged(const Selection& s, bool reveal) {
    update();
    if (!reveal || !m_data) return;
    switch (s.kind) {
    case Selection::Kind::Step: {
        const auto& st = m_data->steps();
        if (s.step < 0 || s.step >= int(st.size())) break;
        const StepInfo& step = st[std::size_t(s.step)];
        const bool inside = step.startNs >= rangeStart() && step.endNs <= rangeEnd();
        // Zoom to the step and its neighbours unless it already fills a good part of the view.
        if (!inside || double(step.durationNs()) < 0.25 * double(m_zoom->span()))
            zoomToSteps(std::max(0, s.step - 1), std::min(int(st.size()) - 1, s.step + 1));
        break;
    }
    case Selection::Kind::Rank: revealRank(s.rank); break;
    case Selection::Kind::Segment: {
        revealRank(s.rank);
        const RankTimeline& rt = m_data->timeline().ranks.at(std::size_t(s.rank));
        if (s.segment >= 0 && std::size_t(s.segment) < rt.segmentCount()) {
            const Segment seg = rt.segment(std::size_t(s.segment));
            if (seg.endNs < rangeStart() || seg.startNs > rangeEnd()) {
                const std::int64_t span = m_zoom->span(), mid = seg.startNs + (seg.endNs - seg.startNs) / 2;
                setRange(mid - span / 2, mid + span / 2, true);
            }
        }
        break;
    }
    case Selection::Kind::Finding: zoomToFinding(s.finding); break;
    case Selection::Kind::Host:
    case Selection::Kind::Nic:
    case Selection::Kind::Switch: {
        auto ranks = m_state ? m_state->highlightedRanks() : std::vector<int>{};
        if (!ranks.empty()) revealRank(ranks.front());
        break;
    }
    default: break;
    }
}

void TimelineView::selectStep(int step, bool reveal) {
    if (m_state && step >= 0) m_state->select(Selection::ofStep(step), reveal);
}

int TimelineView::hitSegment(int rank, double x, int* segmentOut) const {
    *segmentOut = -1;
    if (!m_data || rank < 0) return -1;
    const JobTimeline& tl = m_data->timeline();
    const double nsPerPx = double(m_zoom->span()) / std::max(1, plotRect().width());
    const std::int64_t t = timeAtX(x);
    const std::int64_t slack = std::int64_t(nsPerPx * 2);
    if (std::size_t(rank) >= tl.ranks.size()) return -1;
    std::vector<Segment> scratch;
    std::size_t a = 0;
    const auto segs = tl.ranks[std::size_t(rank)].visibleSegments(t - slack, t + slack + 1, scratch, &a);
    // Prefer the segment under the cursor; among sub-pixel ones, the nearest, preferring communication.
    int best = -1;
    double bestScore = 1e300;
    for (std::size_t i = a; i < a + segs.size(); ++i) {
        const Segment& s = segs[i - a];
        double dist = t < s.startNs ? double(s.startNs - t) : t >= s.endNs ? double(t - s.endNs) : 0.0;
        double score = dist + (s.kind == SegmentKind::Compute ? nsPerPx * 0.5 : 0.0);
        if (score < bestScore) {
            bestScore = score;
            best = int(i);
        }
    }
    *segmentOut = best;
    return best;
}

// ---- events ---------------------------------------------------------------------------------------------

void TimelineView::resizeEvent(QResizeEvent*) {
    const int w = m_vbar->sizeHint().width();
    const QRect plot = plotRect();
    m_vbar->setGeometry(width() - w, plot.top(), w, plot.height());
    updateScrollBar();
    if (m_search->isVisible()) openSearch();
    invalidate();
}

void TimelineView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        m_colors = ViewColors::from(palette());
        invalidate();
    } else if (event->type() == QEvent::FontChange) {
        setJobData(m_data);
    }
    QWidget::changeEvent(event);
}

// ---- descriptions ---------------------------------------------------------------------------------------

void TimelineView::setNoteMarks(std::vector<NoteMark> marks) {
    std::stable_sort(marks.begin(), marks.end(),
                     [](const NoteMark& a, const NoteMark& b) { return a.startNs < b.startNs; });
    m_noteMarks = std::move(marks);
    update();
}

int TimelineView::noteMarkAt(const QPoint& pos) const {
    if (m_noteMarks.empty() || !stepLaneRect().contains(pos) || pos.x() < plotRect().left() - 4) return -1;
    int best = -1;
    double bestD = 7; // pixels: the pennant is ~10 px wide
    for (std::size_t i = 0; i < m_noteMarks.size(); ++i) {
        const double d = pos.x() - xOfTime(m_noteMarks[i].startNs);
        if (d >= -3 && d < bestD) { // on or just right of the pole
            bestD = d;
            best = int(i);
        }
    }
    return best;
}

QString TimelineView::describeAt(const QPoint& pos) const {
    if (!m_data) return {};
    const QRect plot = plotRect();
    if (const int mark = noteMarkAt(pos); mark >= 0) {
        const NoteMark& m = m_noteMarks[std::size_t(mark)];
        return tr("<b>Note</b> · %1<br>%2<br><i>click to jump to it</i>")
            .arg(m.where.toHtmlEscaped(), m.text.toHtmlEscaped().replace('\n', "<br>"));
    }
    const auto& st = m_data->steps();
    if (stepLaneRect().contains(pos) && pos.x() >= plot.left()) {
        int s = stepAtX(pos.x());
        if (s < 0) return {};
        const StepInfo& step = st[std::size_t(s)];
        QString t = tr("<b>Step %1</b><br>%2").arg(step.index).arg(formatNs(step.durationNs()));
        if (m_data->medianStepNs() > 0)
            t += tr(" (%1% of the median)")
                     .arg(qRound(100.0 * double(step.durationNs()) / double(m_data->medianStepNs())));
        if (step.slow) t += tr("<br><span style='color:%1'>slow step</span>").arg(m_colors.slow.name());
        return t;
    }
    const int rowIndex = rowIndexAtY(pos.y());
    if (rowIndex < 0) return {};
    const Row& row = m_rows[std::size_t(rowIndex)];
    if (row.type != Row::Rank) {
        QString name = row.type == Row::Stage ? tr("PP stage %1").arg(row.stage) : tr("DP group %1").arg(row.group);
        return tr("<b>%1</b><br>%2 ranks — click to %3")
            .arg(name)
            .arg(row.last - row.first)
            .arg(row.collapsed ? tr("expand") : tr("collapse"));
    }
    const int rank = row.first;
    const RankTimeline& rt = m_data->timeline().ranks[std::size_t(rank)];
    QString head = tr("<b>%1</b> (%2) · stage %3 · DP group %4")
                       .arg(m_data->rankLabel(rank), QString::fromStdString(rt.ip))
                       .arg(rt.stage)
                       .arg(rt.dpGroup);
    if (m_data->isStraggler(rank)) head += tr("<br><span style='color:%1'>straggler</span>").arg(m_colors.slow.name());
    if (pos.x() < plot.left()) return head;
    int seg = -1;
    hitSegment(rank, pos.x(), &seg);
    if (seg < 0) return head;
    const Segment s = rt.segment(std::size_t(seg));
    QString t = head + tr("<br><b>%1</b> %2").arg(segmentKindName(s.kind), formatNs(s.endNs - s.startNs));
    if (s.peer < std::uint32_t(m_data->rankCount()))
        t += tr(" %1 %2").arg(s.kind == SegmentKind::PpRecv       ? "←"
                                  : s.kind == SegmentKind::PpSend ? "→"
                                                                  : "↔",
                              m_data->rankLabel(int(s.peer)));
    if (s.bytes) t += tr("<br>%1 at %2").arg(formatBytesQ(s.bytes), formatRate(s.bytes, s.endNs - s.startNs));
    t += tr("<br>at %1 from job start")
             .arg(formatNsAtStep(s.startNs - jobStart(), std::max<std::int64_t>(1, (s.endNs - s.startNs) / 10)));
    if (const int k = m_data->timeline().stepAt(s.startNs); k >= 0 && std::size_t(k) < st.size())
        t += tr(" · step %1").arg(st[std::size_t(k)].index);
    return t;
}

QString TimelineView::exportTitle() const {
    if (!m_data) return tr("LLMPrism timeline");
    const QString capture = QFileInfo(m_data->session().source).fileName();
    // The shown range from the job's start (the margin before it is no time of the job's), and the findings
    // whose steps it shows: a ticket's screenshot says what is wrong in it.
    const std::int64_t grain = m_zoom->span() / 100 + 1;
    const std::int64_t from = std::max<std::int64_t>(0, rangeStart() - jobStart()),
                       to = std::max<std::int64_t>(0, rangeEnd() - jobStart());
    QString title = tr("%1 — %2 — %3 … %4 (%5 shown)")
                        .arg(capture.isEmpty() ? m_data->session().source : capture, m_data->title(),
                             formatNsAtStep(from, grain), formatNsAtStep(to, grain), formatNs(to - from));
    QStringList shown;
    const auto& findings = m_data->info().findings;
    for (int i = 0; i < m_data->findingCount() && std::size_t(i) < findings.size(); ++i) {
        const FindingPlace& p = m_data->place(i);
        if (p.endNs < rangeStart() || p.startNs > rangeEnd()) continue;
        const Finding& f = findings[std::size_t(i)];
        QString text = QString::fromStdString(f.kind).replace('_', ' ') + " " + p.where;
        if (f.firstStep >= 0)
            text += f.lastStep > f.firstStep ? tr(" (steps %1–%2)").arg(f.firstStep).arg(f.lastStep)
                                             : tr(" (step %1)").arg(f.firstStep);
        shown << text;
    }
    if (!shown.isEmpty())
        title += (shown.size() == 1 ? tr(" — 1 finding: %1") : tr(" — %1 findings: %2").arg(shown.size()))
                     .arg(listWithMore(shown, 3));
    return title;
}

} // namespace prism::ui
