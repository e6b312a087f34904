#include "compare_window.h"

#include "capture_loader.h"
#include "compare_views.h"
#include "export.h"
#include "timeline_view.h"
#include "view_state.h"
#include "view_style.h"

#include <QApplication>
#include <QBoxLayout>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPainter>
#include <QPointer>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QStatusBar>
#include <QTableWidget>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>

namespace prism::ui {

namespace {

QString ms(double v) { return QString::number(v, 'f', std::fabs(v) < 10 ? 2 : 1) + QStringLiteral(" ms"); }
QString signedMs(double v) { return (v >= 0 ? QStringLiteral("+") : QString()) + ms(v); }

// A difference's place in words, short: "node-0003 (8 NICs, stage 1)", "stage 1", "10.0.0.2 ↔ 10.1.0.3".
QString placeText(const DiffPlace& w) {
    if (!w.srcIp.empty()) return QString::fromStdString(w.srcIp + " ↔ " + w.dstIp);
    if (w.ip.empty()) return w.stage >= 0 ? QObject::tr("every rank of stage %1").arg(w.stage) : QObject::tr("every rank");
    QString s = QString::fromStdString(w.host.empty() ? w.ip : w.host);
    if (w.ips.size() > 1) s += QObject::tr(" (%1 NICs)").arg(w.ips.size());
    else s += QStringLiteral(" (%1)").arg(QString::fromStdString(w.ip));
    if (!w.switchName.empty()) s += QStringLiteral(" on ") + QString::fromStdString(w.switchName);
    else if (w.stage >= 0) s += QObject::tr(", stage %1").arg(w.stage);
    return s;
}

QTableWidgetItem* item(const QString& text, Qt::Alignment align = Qt::AlignLeft | Qt::AlignVCenter) {
    auto* it = new QTableWidgetItem(text);
    it->setTextAlignment(align);
    it->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    return it;
}

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setWordWrap(false);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

} // namespace

CompareWindow::CompareWindow(QWidget* parent) : QMainWindow(parent) {
    setAttribute(Qt::WA_DeleteOnClose, false);
    setWindowTitle(tr("Compare runs — LLMPrism"));
    resize(1500, 980);
    m_loader = new CaptureLoader(this);
    m_stateA = new ViewState(this);
    m_stateB = new ViewState(this);

    m_content = new QWidget(this);
    auto* outer = new QVBoxLayout(m_content);
    outer->setContentsMargins(6, 6, 6, 6);
    auto* top = new QHBoxLayout;
    m_summary = new QLabel(tr("Pick a run to compare with"), m_content);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    top->addWidget(m_summary, 1);
    m_pairs = new QComboBox(m_content);
    m_pairs->setToolTip(tr("The job pair shown (jobs matched by GPUs, else by shape)"));
    top->addWidget(m_pairs);
    auto* swap = new QPushButton(tr("Swap A and B"), m_content);
    top->addWidget(swap);
    auto* exportButton = new QPushButton(tr("Export Image…"), m_content);
    exportButton->setToolTip(tr("Save the whole comparison as one PNG image, with a title line, for a ticket"));
    top->addWidget(exportButton);
    outer->addLayout(top);

    auto* vsplit = new QSplitter(Qt::Vertical, m_content);
    auto* timelines = new QSplitter(Qt::Vertical, vsplit);
    for (const auto& [state, view, label] : {std::tuple{m_stateA, &m_timelineA, &m_labelA},
                                              std::tuple{m_stateB, &m_timelineB, &m_labelB}}) {
        auto* box = new QWidget(timelines);
        auto* l = new QVBoxLayout(box);
        l->setContentsMargins(0, 0, 0, 0);
        l->setSpacing(2);
        *label = new QLabel(box);
        (*label)->setTextFormat(Qt::RichText);
        *view = new TimelineView(state, box);
        l->addWidget(*label);
        l->addWidget(*view, 1);
    }
    auto* bottom = new QSplitter(Qt::Horizontal, vsplit);
    m_chart = new CompareStepChart(bottom);
    auto* tables = new QWidget(bottom);
    auto* tl = new QVBoxLayout(tables);
    tl->setContentsMargins(0, 0, 0, 0);
    m_breakdown = makeTable({tr("Per rank and step"), tr("A"), tr("B"), tr("Change")}, tables);
    m_breakdown->horizontalHeader()->setStretchLastSection(false);
    m_differences = makeTable({tr("#"), tr("What"), tr("Where"), tr("Δ per step"), tr("A → B")}, tables);
    tl->addWidget(m_breakdown);
    tl->addWidget(m_differences, 1);
    m_topology = new CompareTopology(bottom);
    bottom->setSizes({420, 620, 420});
    vsplit->setSizes({600, 340});
    outer->addWidget(vsplit, 1);
    setCentralWidget(m_content);

    connect(m_stateA->zoom(), &ZoomControl::rangeChanged, this, [this] { follow(false); });
    connect(m_stateB->zoom(), &ZoomControl::rangeChanged, this, [this] { follow(true); });
    connect(m_chart, &CompareStepChart::stepClicked, this, &CompareWindow::showStep);
    connect(m_differences, &QTableWidget::cellClicked, this, [this](int row, int) { showDifference(row); });
    connect(m_pairs, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0 && i != m_pair) setPair(i);
    });
    connect(swap, &QPushButton::clicked, this, &CompareWindow::swapRuns);
    connect(exportButton, &QPushButton::clicked, this, &CompareWindow::exportDialog);
    connect(m_loader, &CaptureLoader::finished, this, [this](int id, SessionPtr session) {
        if (id != m_loadId) return;
        if (session && session->staged) { // one window of one job, as for the run compared with (compareWith)
            const QString message =
                tr("%1 is larger than memory and was analysed in stages: only one window of one job is held, not a "
                   "whole run to compare. Compare two runs that fit the memory budget (llmprism --memory SIZE), "
                   "or parts of them (--from, --to).")
                    .arg(session->source);
            m_summary->setText(message.toHtmlEscaped());
            statusBar()->showMessage(tr("Loading failed"));
            emit loadFailed(message);
            return;
        }
        statusBar()->clearMessage();
        // The links need both runs' records: read in the background where a run holds none, then compared.
        readRecordsThen({session, m_b}, [this, session] {
            setRuns(session, m_b);
            emit loaded();
        });
    });
    connect(m_loader, &CaptureLoader::failed, this, [this](int id, const QString& path, const QString& message) {
        if (id != m_loadId) return;
        m_summary->setText(tr("Could not open %1: %2").arg(path.toHtmlEscaped(), message.toHtmlEscaped()));
        statusBar()->showMessage(tr("Loading failed"));
        emit loadFailed(message);
    });
    connect(m_loader, &CaptureLoader::progress, this, [this](int id, double fraction, const QString& stage) {
        if (id == m_loadId) statusBar()->showMessage(tr("%1 %2%").arg(stage).arg(int(fraction * 100)));
    });
}

CompareWindow::~CompareWindow() { m_loader->cancel(); }

void CompareWindow::loadBaseline(const QString& path, const SessionPtr& b, bool strict) {
    m_b = b;
    m_summary->setText(tr("Loading %1 to compare with %2…")
                           .arg(path.toHtmlEscaped(), b ? b->source.toHtmlEscaped() : QString()));
    m_loadId = m_loader->load(path, strict);
}

void CompareWindow::setRuns(const SessionPtr& a, const SessionPtr& b) {
    m_a = a;
    m_b = b;
    if (!m_a || !m_b) return;
    // The links are compared on the flow records, which a capture opened whole no longer holds: read again for
    // this window (once a run: Swap reads nothing). Where they cannot be, the rest is compared without the links,
    // and the headline says why.
    for (auto it = m_records.begin(); it != m_records.end();) // runs no longer shown
        it = it->first == m_a || it->first == m_b ? std::next(it) : m_records.erase(it);
    for (auto it = m_unreadable.begin(); it != m_unreadable.end();)
        it = it->first == m_a || it->first == m_b ? std::next(it) : m_unreadable.erase(it);
    if (const std::vector<SessionPtr> wanted = recordsWanted({m_a, m_b}); !wanted.empty()) {
        QApplication::setOverrideCursor(Qt::WaitCursor); // (readRecords throws nothing)
        keep(readRecords(wanted));
        QApplication::restoreOverrideCursor();
    }
    QStringList unread;
    auto records = [&](const SessionPtr& s) -> std::shared_ptr<const Capture> {
        if (s->recordsHeld()) return s->withRecords();
        if (auto it = m_records.find(s); it != m_records.end()) return it->second;
        unread << m_unreadable.at(s);
        return std::shared_ptr<const Capture>(s, &s->capture); // no records: no links
    };
    const std::shared_ptr<const Capture> ca = records(m_a), cb = records(m_b);
    m_comparison = compareRuns(RunData{m_a->source.toStdString(), ca.get(), &m_a->analysis},
                               RunData{m_b->source.toStdString(), cb.get(), &m_b->analysis});
    m_linksUnread = unread.isEmpty() ? QString() : tr("Links not compared: %1").arg(unread.join("; "));
    for (JobComparison& j : m_comparison.jobs)
        if (!m_linksUnread.isEmpty()) j.notes.push_back(m_linksUnread.toStdString());
    if (m_linksUnread.isEmpty()) statusBar()->clearMessage();
    else statusBar()->showMessage(m_linksUnread);
    m_stateA->setSession(m_a);
    m_stateB->setSession(m_b);
    {
        const QSignalBlocker block(m_pairs);
        m_pairs->clear();
        for (const JobComparison& j : m_comparison.jobs)
            m_pairs->addItem(QStringLiteral("%1 ↔ %2").arg(QString::fromStdString(j.a), QString::fromStdString(j.b)));
        m_pairs->setVisible(m_comparison.jobs.size() > 1);
    }
    m_pair = -1;
    setPair(m_comparison.jobs.empty() ? -1 : 0);
    setWindowTitle(tr("Compare %1 with %2 — LLMPrism")
                       .arg(QFileInfo(m_a->source).fileName(), QFileInfo(m_b->source).fileName()));
}

std::vector<SessionPtr> CompareWindow::recordsWanted(const std::vector<SessionPtr>& runs) const {
    std::vector<SessionPtr> wanted;
    for (const SessionPtr& s : runs)
        if (s && !s->recordsHeld() && !m_records.count(s) && !m_unreadable.count(s) &&
            std::find(wanted.begin(), wanted.end(), s) == wanted.end()) // (a run compared with itself: once)
            wanted.push_back(s);
    return wanted;
}

CompareWindow::RecordsRead CompareWindow::readRecords(const std::vector<SessionPtr>& runs) {
    RecordsRead out;
    for (const SessionPtr& s : runs) {
        try {
            out.read.emplace_back(s, s->withRecords());
        } catch (const std::exception& e) {
            out.failed.emplace_back(s, CaptureLoader::describeError(e).simplified());
        }
    }
    return out;
}

void CompareWindow::keep(const RecordsRead& r) {
    for (const auto& [s, c] : r.read) m_records[s] = c;
    for (const auto& [s, m] : r.failed) m_unreadable[s] = m;
}

void CompareWindow::readRecordsThen(const std::vector<SessionPtr>& runs, std::function<void()> then) {
    const std::vector<SessionPtr> wanted = recordsWanted(runs);
    if (wanted.empty()) {
        then();
        return;
    }
    statusBar()->showMessage(tr("Reading the flow records for the links…"));
    const int reading = ++m_reading;
    QPointer<CompareWindow> self(this);
    (void)QtConcurrent::run([self, reading, wanted, then] {
        RecordsRead r = readRecords(wanted);
        QMetaObject::invokeMethod( // to the application, which outlives the window (see CaptureLoader)
            qApp,
            [self, reading, r = std::move(r), then] {
                if (!self || self->m_reading != reading) return; // closed, or a newer read
                self->keep(r);
                self->statusBar()->clearMessage();
                then();
            },
            Qt::QueuedConnection);
    });
}

void CompareWindow::swapRuns() {
    if (m_a && m_b) setRuns(SessionPtr(m_b), SessionPtr(m_a));
}

const JobComparison* CompareWindow::currentJob() const {
    return m_pair >= 0 && m_pair < pairCount() ? &m_comparison.jobs[std::size_t(m_pair)] : nullptr;
}

void CompareWindow::setPair(int pair) {
    m_pair = pair;
    {
        const QSignalBlocker block(m_pairs);
        m_pairs->setCurrentIndex(pair);
    }
    rebuild();
}

QString CompareWindow::runText(bool b) const {
    const SessionPtr& s = b ? m_b : m_a;
    const JobComparison* j = currentJob();
    if (!s) return {};
    const ViewState* state = b ? m_stateB : m_stateA;
    QString text = QStringLiteral("<b style='color:%1'>%2</b> &nbsp;%3")
                       .arg(b ? QStringLiteral("#f28e2b") : QStringLiteral("#4e79a7"), b ? tr("B") : tr("A"),
                            s->source.toHtmlEscaped());
    if (j && state->jobData())
        text += QStringLiteral(" — %1 · median step %2")
                    .arg(state->jobData()->title().toHtmlEscaped(), ms(b ? j->medianStepMsB : j->medianStepMsA));
    return text;
}

QString CompareWindow::summaryText() const {
    const JobComparison* j = currentJob();
    if (!m_a || !m_b) return {};
    if (!j) return tr("No job of A matches a job of B (neither the same GPUs nor the same shape)");
    const double d = j->medianStepMsB - j->medianStepMsA;
    QString s = tr("Median step %1 → %2 (%3%4)")
                    .arg(ms(j->medianStepMsA), ms(j->medianStepMsB), signedMs(d),
                         j->medianStepMsA > 0 ? QStringLiteral(", %1%2%").arg(d >= 0 ? "+" : "").arg(100 * d / j->medianStepMsA, 0, 'f', 1)
                                              : QString());
    if (j->differences.empty()) return s + tr(". No difference above noise.");
    const Difference& top = j->differences.front();
    return s + tr(". Main difference: %1").arg(QString::fromStdString(top.message));
}

void CompareWindow::rebuild() {
    const JobComparison* j = currentJob();
    if (j) {
        m_stateA->setJob(j->jobA);
        m_stateB->setJob(j->jobB);
    }
    m_labelA->setText(runText(false));
    m_labelB->setText(runText(true));
    QString summary = summaryText().toHtmlEscaped();
    if (j && !j->differences.empty()) summary.replace(tr("Main difference:"), tr("<b>Main difference:</b>"));
    if (!m_linksUnread.isEmpty())
        summary += "<br><span style='color:#b35900'>" + m_linksUnread.toHtmlEscaped() + "</span>";
    m_summary->setText(summary);
    std::vector<double> a, b;
    if (j) {
        for (const StepInfo& s : m_a->report().jobs[std::size_t(j->jobA)].steps) a.push_back(double(s.durationNs()) / 1e6);
        for (const StepInfo& s : m_b->report().jobs[std::size_t(j->jobB)].steps) b.push_back(double(s.durationNs()) / 1e6);
    }
    m_chart->setRuns(a, b, j ? j->medianStepMsA : 0, j ? j->medianStepMsB : 0);
    m_topology->setComparison(m_b, j);
    fillTables();
    if (j) {
        m_timelineA->fitAll();
        follow(false);
        showDifference(0); // the main difference's ranks in sight
    }
}

void CompareWindow::fillTables() {
    const JobComparison* j = currentJob();
    m_breakdown->setRowCount(0);
    m_differences->setRowCount(0);
    if (!j) return;
    const Breakdown &a = j->breakdownA, &b = j->breakdownB;
    const QList<std::tuple<QString, double, double>> rows = {{tr("Median step"), j->medianStepMsA, j->medianStepMsB},
                                                            {tr("Compute"), a.compute, b.compute},
                                                            {tr("PP send/receive"), a.pp, b.pp},
                                                            {tr("DP sync"), a.dpSync, b.dpSync},
                                                            {tr("Waiting"), a.waiting, b.waiting}};
    const Qt::Alignment right = Qt::AlignRight | Qt::AlignVCenter;
    const ViewColors colors = ViewColors::from(palette());
    for (const auto& [name, va, vb] : rows) {
        const int r = m_breakdown->rowCount();
        m_breakdown->insertRow(r);
        m_breakdown->setItem(r, 0, item(name));
        m_breakdown->setItem(r, 1, item(ms(va), right));
        m_breakdown->setItem(r, 2, item(ms(vb), right));
        const double d = vb - va;
        QString change = signedMs(d);
        if (va > 0) change += QStringLiteral(" (%1%2%)").arg(d >= 0 ? "+" : "").arg(100 * d / va, 0, 'f', 1);
        QTableWidgetItem* c = item(change, right);
        // Changes beyond 2% of the median step stand out: slower red, faster blue.
        if (std::fabs(d) > 0.02 * std::max(1e-9, j->medianStepMsA))
            c->setForeground(d > 0 ? colors.slow : QColor(31, 119, 180));
        m_breakdown->setItem(r, 3, c);
    }
    m_breakdown->resizeColumnsToContents();
    m_breakdown->resizeRowsToContents();
    int h = m_breakdown->horizontalHeader()->height() + 2 * m_breakdown->frameWidth();
    for (int r = 0; r < m_breakdown->rowCount(); ++r) h += m_breakdown->rowHeight(r);
    m_breakdown->setFixedHeight(h);
    if (j->differences.empty()) {
        m_differences->insertRow(0);
        m_differences->setItem(0, 0, item(QString()));
        m_differences->setItem(0, 1, item(tr("none")));
        m_differences->setItem(0, 2, item(tr("no difference above the step-to-step noise of either run")));
    }
    for (std::size_t i = 0; i < j->differences.size(); ++i) {
        const Difference& d = j->differences[i];
        const int r = int(i);
        m_differences->insertRow(r);
        QString what = QString::fromStdString(d.what);
        if (d.effectOf >= 0) what += tr(" (from #%1)").arg(d.effectOf + 1);
        m_differences->setItem(r, 0, item(QString::number(i + 1), right));
        m_differences->setItem(r, 1, item(what));
        QString place = placeText(d.where);
        if (d.firstStep >= 0)
            place += d.firstStep == d.lastStep ? tr(" · step %1").arg(d.firstStep)
                                               : tr(" · steps %1–%2").arg(d.firstStep).arg(d.lastStep);
        m_differences->setItem(r, 2, item(place));
        // A change in a few steps: what it is in them, then its share of every step (what the list is sorted by).
        QTableWidgetItem* delta = item(d.firstStep >= 0 ? tr("%1 there (%2 per step)")
                                                              .arg(signedMs(d.rangeDeltaMs), signedMs(d.deltaMsPerStep))
                                                        : signedMs(d.deltaMsPerStep),
                                       right);
        if (d.effectOf < 0) delta->setForeground(d.deltaMsPerStep > 0 ? colors.slow : QColor(31, 119, 180));
        m_differences->setItem(r, 3, delta);
        QString ab = ms(d.aMs) + QStringLiteral(" → ") + ms(d.bMs);
        if (d.what == "link") ab += QStringLiteral(" (%1 → %2 Gb/s)").arg(d.aGbps, 0, 'f', 1).arg(d.bGbps, 0, 'f', 1);
        m_differences->setItem(r, 4, item(ab));
        for (int c = 0; c < 5; ++c) m_differences->item(r, c)->setToolTip(QString::fromStdString(d.message));
    }
    m_differences->resizeColumnsToContents();
    m_differences->resizeRowsToContents();
}

void CompareWindow::follow(bool fromB) {
    if (m_following || !m_stateA->jobData() || !m_stateB->jobData()) return;
    m_following = true;
    ZoomControl* src = fromB ? m_stateB->zoom() : m_stateA->zoom();
    ZoomControl* dst = fromB ? m_stateA->zoom() : m_stateB->zoom();
    const auto& ss = (fromB ? m_stateB : m_stateA)->jobData()->steps();
    const auto& ds = (fromB ? m_stateA : m_stateB)->jobData()->steps();
    // Aligned by step: the step at the left edge of this view starts where the same step of the other run starts;
    // both show the same span of time, so a longer step in B reaches further right.
    std::int64_t offset = (fromB ? m_stateA : m_stateB)->jobData()->startNs() - (fromB ? m_stateB : m_stateA)->jobData()->startNs();
    int k = -1;
    if (!ss.empty() && !ds.empty()) {
        const auto it = std::upper_bound(ss.begin(), ss.end(), src->start(),
                                         [](std::int64_t t, const StepInfo& s) { return t < s.endNs; });
        k = std::min<int>(int(std::min<std::ptrdiff_t>(it - ss.begin(), std::ptrdiff_t(ss.size()) - 1)), int(ds.size()) - 1);
        offset = ds[std::size_t(k)].startNs - ss[std::size_t(k)].startNs;
    }
    dst->setRange(src->start() + offset, src->end() + offset, false);
    // The chart shades the steps of A's view.
    const ZoomControl* za = m_stateA->zoom();
    const auto& sa = m_stateA->jobData()->steps();
    if (!sa.empty()) {
        auto stepOf = [&](std::int64_t t) {
            const auto it = std::upper_bound(sa.begin(), sa.end(), t, [](std::int64_t v, const StepInfo& s) { return v < s.endNs; });
            const int i = int(std::min<std::ptrdiff_t>(it - sa.begin(), std::ptrdiff_t(sa.size()) - 1));
            const StepInfo& s = sa[std::size_t(i)];
            return i + std::clamp(double(t - s.startNs) / double(std::max<std::int64_t>(1, s.durationNs())), 0.0, 1.0) - 0.5;
        };
        m_chart->setShownSteps(std::max(0.0, stepOf(za->start())), stepOf(za->end()));
    }
    m_following = false;
}

void CompareWindow::showStep(int step) {
    if (!m_stateA->jobData()) return;
    const int n = int(m_stateA->jobData()->steps().size());
    if (step < 0 || step >= n) return;
    m_timelineA->zoomToSteps(std::max(0, step - 1), std::min(n - 1, step + 1));
}

void CompareWindow::showDifference(int row) {
    const JobComparison* j = currentJob();
    if (!j || row < 0 || row >= int(j->differences.size())) return;
    const Difference& d = j->differences[std::size_t(row)];
    const DiffPlace& w = d.where;
    // A change in a few steps: B's timeline shows them (and a step either side), A's follows to the same steps.
    if (d.firstStep >= 0 && m_stateB->jobData()) {
        const int n = int(m_stateB->jobData()->steps().size());
        m_timelineB->zoomToSteps(std::max(0, d.firstStep - 1), std::min(n - 1, d.lastStep + 1));
    }
    const std::string ipB = !w.ip.empty() ? w.ip : w.srcIp;
    if (ipB.empty()) return;
    m_timelineB->search(QString::fromStdString(ipB));
    m_timelineA->search(QString::fromStdString(w.ipA.empty() ? ipB : w.ipA));
}

QImage CompareWindow::renderImage() {
    const QPixmap body = m_content->grab();
    const QString title = tr("LLMPrism compare — A: %1 · B: %2").arg(m_a ? m_a->source : QString(), m_b ? m_b->source : QString());
    const int fh = fontMetrics().height();
    QImage image(body.width(), body.height() + fh + 8, QImage::Format_ARGB32_Premultiplied);
    const ViewColors colors = ViewColors::from(palette());
    image.fill(colors.background);
    QPainter p(&image);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(colors.text);
    p.drawText(QRect(8, 4, body.width() - 16, fh), Qt::AlignLeft | Qt::AlignVCenter, title);
    p.drawPixmap(0, fh + 8, body);
    return image;
}

bool CompareWindow::exportImage(const QString& path, QString* error) {
    const QImage image = renderImage();
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit()) {
        if (error) *error = tr("%1: cannot write the image (%2)").arg(path, file.errorString());
        return false;
    }
    return true;
}

void CompareWindow::exportDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the comparison"), QStringLiteral("compare.png"),
                                                      tr("PNG image (*.png)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportImage(path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
    else statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

} // namespace prism::ui
