// The main window's views working together on a simulated `anomalies` capture: the job list, the details of a
// clicked step, the step chart driving the timeline, findings zooming the timeline, the visible range the
// timeline, step chart and notes share, the topology selecting ranks, the per-rank chart, export (PNG, SVG,
// clipboard), headless screenshots, persistence, bad input.
#include "capture_loader.h"
#include "details_panel.h"
#include "export.h"
#include "list_models.h"
#include "main_window.h"
#include "notes_panel.h"
#include "rank_chart.h"
#include "step_chart.h"
#include "timeline_view.h"
#include "topology_view.h"
#include "view_state.h"
#include "view_style.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QChartView>
#include <QClipboard>
#include <QFile>
#include <QHeaderView>
#include <QMessageBox>
#include <QProcess>
#include <QSet>
#include <QSplitter>
#include <QSvgRenderer>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeView>
#include <QStandardPaths>
#include <QtTest>

using namespace prism;
using namespace prism::ui;

namespace {

void sendMouse(QWidget* w, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons) {
    QMouseEvent ev(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button, buttons, Qt::NoModifier);
    QApplication::sendEvent(w, &ev);
}

void click(QWidget* w, QPoint pos) {
    sendMouse(w, QEvent::MouseButtonPress, pos, Qt::LeftButton, Qt::LeftButton);
    sendMouse(w, QEvent::MouseButtonRelease, pos, Qt::LeftButton, Qt::NoButton);
}

// Distinct colours in an image (sampled): a blank or single-colour image has one or two.
int distinctColors(const QImage& img) {
    QSet<QRgb> colors;
    for (int y = 0; y < img.height(); y += 3)
        for (int x = 0; x < img.width(); x += 3) colors.insert(img.pixel(x, y));
    return int(colors.size());
}

QString guiBinary() {
    // The GUI executable sits next to the CLI's directory in the build tree.
    QDir dir = QFileInfo(LLMPRISM_CLI).dir();
    dir.cdUp();
    return dir.filePath("gui/llmprism");
}

// A step chart of 900 x 400 showing a session.
struct ChartOf {
    ViewState state;
    StepChart chart{&state};
    explicit ChartOf(std::shared_ptr<AnalysisSession> session) {
        chart.resize(900, 400);
        chart.show();
        state.setSession(std::move(session));
        QApplication::processEvents();
    }
};

} // namespace

class TestViews : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_capture;
    SessionPtr m_session;

    std::unique_ptr<MainWindow> window() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        w->setSession(m_session);
        w->timeline()->setFocus();
        return w;
    }
    int jobWithFindings() const {
        const auto& jobs = m_session->report().jobs;
        for (int j = 0; j < int(jobs.size()); ++j)
            if (!jobs[std::size_t(j)].findings.empty()) return j;
        return -1;
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("LLMPrismTestViews");
        QSettings().clear();
        QVERIFY(m_dir.isValid());
        m_capture = m_dir.filePath("anomalies");
        QProcess sim;
        sim.start(LLMPRISM_CLI, {"simulate", "--preset", "anomalies", "--seed", "11", "--out", m_capture});
        QVERIFY(sim.waitForFinished(180000));
        QCOMPARE(sim.exitCode(), 0);
        m_session = CaptureLoader::loadNow(m_capture);
        QVERIFY(m_session && !m_session->report().jobs.empty());
    }

    void aLoadedSampleFillsTheJobList() {
        MainWindow w;
        w.show();
        QAbstractItemModelTester tester(w.jobList()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPath(m_capture);
        QVERIFY(done.wait(120000));
        const auto& jobs = w.session()->report().jobs;
        const QAbstractItemModel* list = w.jobList()->model();
        QCOMPARE(list->rowCount(), int(jobs.size()));
        for (int i = 0; i < list->rowCount(); ++i) {
            auto text = [&](int column) { return list->index(i, column).data().toString(); };
            const JobInfo& j = jobs.at(std::size_t(list->index(i, 0).data(JobTableModel::JobRole).toInt()));
            QCOMPARE(text(0), QString::fromStdString(j.id));
            QCOMPARE(text(1).toInt(), int(j.gpus.size()));
            QCOMPARE(text(2).toInt(), int(j.hosts.size()));
            QCOMPARE(text(3), QString("%1×%2×%3").arg(j.tp).arg(j.pp).arg(j.dp));
            QCOMPARE(text(4).toInt(), int(j.steps.size()));
            QCOMPARE(text(6).toInt(), int(j.findings.size()));
            if (!j.steps.empty()) QVERIFY(text(5).contains("s")); // a duration with its unit
        }
        // Selecting another job drives the other views.
        if (jobs.size() > 1) {
            const QModelIndex second = list->index(1, 0);
            w.jobList()->selectionModel()->select(second,
                                                  QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
            w.jobList()->setCurrentIndex(second);
            const int job = second.data(JobTableModel::JobRole).toInt();
            QCOMPARE(w.viewState()->job(), job);
            QCOMPARE(w.timeline()->jobData()->jobIndex(), job);
            QVERIFY(w.detailsPanel()->text().contains(QString::fromStdString(jobs[std::size_t(job)].id)));
            // A click on a header sorts by that column's numbers; the shown job stays selected.
            QTest::mouseClick(w.jobList()->header()->viewport(), Qt::LeftButton, {},
                              QPoint(w.jobList()->header()->sectionViewportPosition(JobTableModel::MedianStep) + 5,
                                     w.jobList()->header()->height() / 2));
            QCOMPARE(w.jobList()->header()->sortIndicatorSection(), int(JobTableModel::MedianStep));
            const double sign = w.jobList()->header()->sortIndicatorOrder() == Qt::AscendingOrder ? 1 : -1;
            auto median = [&](int row) {
                return list->index(row, JobTableModel::MedianStep).data(JobTableModel::SortRole).toDouble();
            };
            for (int i = 1; i < list->rowCount(); ++i) QVERIFY(sign * median(i - 1) <= sign * median(i));
            const QModelIndexList selected = w.jobList()->selectionModel()->selectedRows();
            QCOMPARE(selected.size(), 1);
            QCOMPARE(selected.first().data(JobTableModel::JobRole).toInt(), job);
            QCOMPARE(w.viewState()->job(), job);
        }
    }

    // A finding's evidence reads with its unit: a share as a percentage ("slow records 1" read as a count).
    void aFindingsEvidenceReadsWithItsUnit() {
        auto w = window();
        const JobData& d = *w->viewState()->jobData();
        int link = -1;
        for (int i = 0; i < d.findingCount() && link < 0; ++i)
            if (d.info().findings[std::size_t(i)].kind == "slow_link") link = i;
        if (link < 0) QSKIP("the capture's first job has no slow link");
        w->viewState()->select(Selection::ofFinding(link), false);
        const QString text = w->detailsPanel()->text();
        QVERIFY2(text.contains("slow records") && !text.contains("slow records share"), qPrintable(text));
        QVERIFY2(text.contains(" %"), qPrintable(text));
        QVERIFY2(text.contains("Gb/s"), qPrintable(text));
    }

    void clickingAStepShowsItsDurationInTheDetailsPanel() {
        auto w = window();
        const JobData& d = *w->viewState()->jobData();
        if (d.steps().empty()) QSKIP("the engine found no steps in this capture (re-run once step division lands)");
        TimelineView* tl = w->timeline();
        const int s = int(d.steps().size()) / 3;
        const StepInfo& step = d.steps()[std::size_t(s)];
        tl->zoomToSteps(s, s + 2);
        click(tl, QPoint(int(tl->xOfTime(step.startNs + step.durationNs() / 2)), tl->stepLaneRect().center().y()));
        QCOMPARE(w->viewState()->selection().step, s);
        const QString text = w->detailsPanel()->text();
        QVERIFY2(text.contains(QString("Step %1").arg(step.index)), qPrintable(text));
        QVERIFY2(text.contains(formatNs(step.durationNs())), qPrintable(text));
    }

    void clickingAChartPointSelectsTheStepInTheTimeline() {
        auto w = window();
        const JobData& d = *w->viewState()->jobData();
        if (d.steps().size() < 3) QSKIP("the engine found fewer than 3 steps (re-run once step division lands)");
        w->showView(MainWindow::View::Steps);
        QApplication::processEvents();
        StepChart* chart = w->stepChart();
        QVERIFY(chart->linePointCount() > 0);
        // The slowest step: the point a user would click.
        int s = 0;
        for (int i = 0; i < int(d.steps().size()); ++i)
            if (d.steps()[std::size_t(i)].durationNs() > d.steps()[std::size_t(s)].durationNs()) s = i;
        const QPoint p = chart->viewportPointOfStep(s);
        QVERIFY(chart->chartView()->viewport()->rect().contains(p));
        click(chart->chartView()->viewport(), p);
        QCOMPARE(int(w->viewState()->selection().kind), int(Selection::Kind::Step));
        QCOMPARE(w->viewState()->selection().step, s);
        const StepInfo& step = d.steps()[std::size_t(s)];
        QVERIFY(w->timeline()->rangeStart() <= step.startNs && step.endNs <= w->timeline()->rangeEnd());
        // ...and the step is a good part of the view, not a sliver of the whole job.
        QVERIFY(w->timeline()->rangeEnd() - w->timeline()->rangeStart() <
                (d.timeline().endNs - d.timeline().startNs) / 2);
        // The per-rank chart follows the selected step: each rank's time adds up to at most the step.
        QCOMPARE(w->rankChart()->step(), s);
        QCOMPARE(int(w->rankChart()->splits().size()), d.rankCount());
        for (const TimeSplit& sp : w->rankChart()->splits()) QVERIFY(sp.total() <= step.durationNs() + 1000);
    }

    void clickingAFindingZoomsTheTimelineToIt() {
        const int job = jobWithFindings();
        if (job < 0) QSKIP("the engine raised no finding on this capture (re-run once diagnosis lands)");
        auto w = window();
        w->viewState()->setJob(job);
        QTreeView* list = w->findingsList();
        QCOMPARE(list->model()->rowCount(), int(m_session->report().jobs[std::size_t(job)].findings.size()));
        for (int i = 0; i < list->model()->rowCount(); ++i) {
            const QModelIndex item = list->model()->index(i, 0);
            const int f = item.data(FindingTableModel::FindingRole).toInt();
            w->timeline()->fitAll();
            const QRect r = list->visualRect(item);
            click(list->viewport(), r.center());
            QCOMPARE(int(w->viewState()->selection().kind), int(Selection::Kind::Finding));
            QCOMPARE(w->viewState()->selection().finding, f);
            const FindingPlace& place = w->viewState()->jobData()->place(f);
            const TimelineView* tl = w->timeline();
            QVERIFY(tl->rangeStart() <= place.startNs && place.endNs <= tl->rangeEnd());
            QVERIFY(tl->rangeEnd() - tl->rangeStart() <= (place.endNs - place.startNs) * 3 / 2);
            if (!place.ranks.empty()) {
                const int y = tl->yOfRank(place.ranks.front());
                QVERIFY(y >= tl->plotRect().top() && y <= tl->plotRect().bottom());
            }
            QVERIFY(w->detailsPanel()->text().contains(place.where));
        }
    }

    // One visible range for the timeline, the step chart and the notes: a zoom in one shows in the others, and
    // the timeline's Backspace undoes a zoom made in the chart.
    void theTimelineTheStepChartAndTheNotesShareTheVisibleRange() {
        auto w = window();
        const JobData& d = *w->viewState()->jobData();
        const auto& st = d.steps();
        if (st.size() < 20) QSKIP("the engine found fewer than 20 steps (re-run once step division lands)");
        w->showView(MainWindow::View::Steps);
        QApplication::processEvents();
        TimelineView* tl = w->timeline();
        StepChart* chart = w->stepChart();
        QCOMPARE(tl->zoom(), w->viewState()->zoom());
        // The timeline on steps 10-12: the chart shows them (and their neighbours: at least 8 steps).
        tl->zoomToSteps(10, 12);
        const auto [lo, hi] = chart->visibleSteps();
        QVERIFY2(lo <= st[10].index - 0.5 && hi >= st[12].index + 0.5 && hi - lo < 8.01,
                 qPrintable(QString("%1..%2").arg(lo).arg(hi)));
        QVERIFY(chart->title().contains("showing steps"));
        // A note on what is shown takes that range.
        w->viewState()->clearSelection();
        Note n;
        QVERIFY(w->notesPanel()->noteForSelection(&n));
        QCOMPARE(n.target, NoteTarget::Range);
        QCOMPARE(n.startNs, tl->rangeStart());
        QCOMPARE(n.endNs, tl->rangeEnd());
        // The wheel over the chart zooms the timeline out; one Backspace in the timeline undoes the gesture.
        const std::int64_t z0 = tl->rangeStart(), z1 = tl->rangeEnd();
        QWidget* vp = chart->chartView()->viewport();
        const QPoint at = chart->viewportPointOfStep(11);
        for (int i = 0; i < 3; ++i) {
            QWheelEvent wheel(QPointF(at), QPointF(vp->mapToGlobal(at)), QPoint(), QPoint(0, -120), Qt::NoButton,
                              Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(vp, &wheel);
        }
        QVERIFY(tl->rangeEnd() - tl->rangeStart() > (z1 - z0) * 3 / 2);
        QVERIFY(chart->visibleSteps().second - chart->visibleSteps().first > hi - lo);
        tl->setFocus();
        QTest::keyClick(tl, Qt::Key_Backspace);
        QCOMPARE(tl->rangeStart(), z0);
        QCOMPARE(tl->rangeEnd(), z1);
        // A drag to the left in the chart brings later steps into the timeline, at the same width.
        const QPoint mid = vp->rect().center();
        sendMouse(vp, QEvent::MouseButtonPress, mid, Qt::LeftButton, Qt::LeftButton);
        sendMouse(vp, QEvent::MouseMove, mid - QPoint(100, 0), Qt::NoButton, Qt::LeftButton);
        sendMouse(vp, QEvent::MouseButtonRelease, mid - QPoint(100, 0), Qt::LeftButton, Qt::NoButton);
        QVERIFY(tl->rangeStart() > z0);
        QCOMPARE(tl->rangeEnd() - tl->rangeStart(), z1 - z0);
        // A double-click in the chart shows every step, in the timeline too.
        sendMouse(vp, QEvent::MouseButtonDblClick, mid, Qt::LeftButton, Qt::LeftButton);
        QVERIFY(tl->rangeStart() <= d.startNs() && tl->rangeEnd() >= d.endNs());
        QCOMPARE(chart->visibleSteps().first, st.front().index - 0.5);
        QVERIFY(!chart->title().contains("showing steps"));
    }

    // What the topology draws in red is named in its title (a slow link's NIC as host:GPU with its switch, a
    // slow rank's GPU and how many more of its TP group are red with it, as the timeline outlines them), and the
    // slow link is drawn over the host boxes to its NIC's cell, which is outlined.
    void theTopologyNamesWhatItDrawsInRed() {
        auto w = window();
        w->showView(MainWindow::View::Topology);
        QApplication::processEvents();
        TopologyView* topo = w->topologyView();
        const QString title = topo->exportTitle();
        const JobData& d = *w->viewState()->jobData();
        bool link = false, rank = false;
        std::size_t group = 0;
        for (const Finding& f : d.info().findings) {
            link = link || f.kind == "slow_link";
            rank = rank || f.kind == "slow_rank";
            if (f.kind == "slow_rank") group = std::max(group, f.group.size());
        }
        if (!link && !rank) QSKIP("the capture's first job has no slow link or rank");
        QVERIFY2(title.contains(" — in red: "), qPrintable(title));
        if (link) QVERIFY2(title.contains("slow link node-") && title.contains(" ↔ leaf-"), qPrintable(title));
        if (rank) QVERIFY2(title.contains("slow rank node-"), qPrintable(title));
        if (group > 1)
            QVERIFY2(title.contains(QString(" and %1 more of its TP group").arg(group - 1)), qPrintable(title));
    }

    void clickingAHostInTheTopologySelectsItsRanks() {
        auto w = window();
        w->showView(MainWindow::View::Topology);
        QApplication::processEvents();
        TopologyView* topo = w->topologyView();
        const JobData& d = *w->viewState()->jobData();
        const int host = d.hostOfRank(d.rankCount() - 1);
        QVERIFY(host >= 0);
        const QRect r = topo->hostRect(host);
        QVERIFY(!r.isEmpty());
        click(topo, QPoint(r.left() + 3, r.top() + 3)); // the host box, not one of its NIC cells
        QCOMPARE(int(w->viewState()->selection().kind), int(Selection::Kind::Host));
        const auto ranks = w->viewState()->highlightedRanks();
        auto expected = d.ranksOfHost(host);
        std::sort(expected.begin(), expected.end());
        QCOMPARE(ranks, expected);
        const int y = w->timeline()->yOfRank(ranks.front());
        QVERIFY(y >= w->timeline()->plotRect().top() && y <= w->timeline()->plotRect().bottom());
        // A NIC cell selects that NIC.
        const int nic = d.nicOfRank(ranks.front());
        click(topo, topo->nicRect(nic).center());
        QCOMPARE(w->viewState()->selection().nic, nic);
        QVERIFY(w->detailsPanel()->text().contains(d.rankLabel(ranks.front())));
    }

    // A session of one synthetic job: steps of the given durations (slow where marked), one rank computing
    // throughout, and the given findings.
    static std::shared_ptr<AnalysisSession> oneJob(const std::vector<std::pair<std::int64_t, bool>>& steps,
                                                   std::vector<Finding> findings = {}) {
        auto s = std::make_shared<AnalysisSession>();
        s->source = "synthetic";
        JobInfo job;
        job.id = "job-0";
        JobTimeline tl;
        std::int64_t t = 0;
        for (const auto& [d, slow] : steps) {
            tl.steps.push_back({int(tl.steps.size()), t, t + d, slow});
            t += d;
        }
        tl.startNs = 0;
        tl.endNs = t;
        RankTimeline rank;
        rank.ip = "10.0.0.1";
        rank.label = "node-0001:0";
        rank.segments.push_back({0, t, SegmentKind::Compute});
        rank.maxSegmentNs = t;
        tl.ranks.push_back(rank);
        job.steps = tl.steps;
        job.findings = std::move(findings);
        s->analysis.report.jobs.push_back(job);
        s->analysis.jobs.emplace_back().timeline = tl;
        return s;
    }

    void aLongStepSeriesIsReducedToMinMaxPerPixel() {
        // A job with 20,000 steps and one spike: the chart draws at most two points per pixel column, and the
        // spike survives the reduction.
        const int spike = 12345;
        std::vector<std::pair<std::int64_t, bool>> steps;
        for (int k = 0; k < 20000; ++k)
            steps.push_back({k == spike ? 900'000'000 : 100'000'000 + (k * 7919 % 1000) * 10'000, k == spike});
        ChartOf shown(oneJob(steps));
        StepChart& chart = shown.chart;
        const QPoint spikeAt = chart.viewportPointOfStep(spike);
        QVERIFY(chart.linePointCount() > 100);
        QVERIFY2(chart.linePointCount() <= 2 * 900, qPrintable(QString::number(chart.linePointCount())));
        // The highest point drawn is the spike: near the top of the plot, above every other step.
        QVERIFY(spikeAt.y() < chart.viewportPointOfStep(spike - 1).y() - 50);
        QCOMPARE(chart.selectAt(spikeAt), spike);
    }

    // Thousands of steps are read by zooming: the wheel zooms around the pointer, a drag pans, a double-click
    // shows all again; zoomed in, each visible step is drawn (no reduction) and the title names the range.
    void theStepChartZoomsAndPansThroughThousandsOfSteps() {
        std::vector<std::pair<std::int64_t, bool>> steps;
        for (int k = 0; k < 4000; ++k) steps.push_back({45'000'000'000LL + (k * 7919 % 1000) * 1'000'000, false});
        ChartOf shown(oneJob(steps));
        StepChart& chart = shown.chart;
        QWidget* vp = chart.chartView()->viewport();
        const QPoint at = chart.viewportPointOfStep(1000);
        for (int i = 0; i < 12; ++i) {
            QWheelEvent wheel(QPointF(at), QPointF(vp->mapToGlobal(at)), QPoint(), QPoint(0, 120), Qt::NoButton,
                              Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(vp, &wheel);
        }
        auto [lo, hi] = chart.visibleSteps();
        QVERIFY2(hi - lo < 400 && lo < 1000 && hi > 1000, qPrintable(QString("%1..%2").arg(lo).arg(hi)));
        QVERIFY(chart.title().contains("showing steps"));
        QVERIFY(chart.linePointCount() <= int(hi - lo) + 3); // the visible steps (and one beyond each side)
        // A drag to the left moves the view to later steps; a click without moving still selects.
        const QPoint mid = vp->rect().center();
        sendMouse(vp, QEvent::MouseButtonPress, mid, Qt::LeftButton, Qt::LeftButton);
        sendMouse(vp, QEvent::MouseMove, mid - QPoint(200, 0), Qt::NoButton, Qt::LeftButton);
        sendMouse(vp, QEvent::MouseButtonRelease, mid - QPoint(200, 0), Qt::LeftButton, Qt::NoButton);
        QVERIFY(chart.visibleSteps().first > lo);
        QCOMPARE(shown.state.selection().kind, Selection::Kind::None);
        sendMouse(vp, QEvent::MouseButtonDblClick, mid, Qt::LeftButton, Qt::LeftButton);
        QCOMPARE(chart.visibleSteps().first, -0.5);
        QVERIFY(!chart.title().contains("showing steps"));
    }

    // Slow steps judged against a usual step below the median (over half of the steps slowed): the chart draws
    // it beside the median and names it in its title; when the usual step is the median, only the median.
    void theStepChartShowsTheUsualStepSlowStepsWereJudgedAgainst() {
        for (const double usualMs : {70.0, 130.0}) {
            std::vector<std::pair<std::int64_t, bool>> steps; // 9 of 70 ms, 11 of 130: the median is a slowed step
            for (int k = 0; k < 20; ++k) steps.push_back({(k < 9 ? 70 : 130) * 1'000'000LL, k >= 9});
            Finding f;
            f.kind = "slow_step";
            f.firstStep = 9;
            f.lastStep = 19;
            f.evidence = {{"median_step_ms", 130.0}, {"usual_step_ms", usualMs}};
            ChartOf shown(oneJob(steps, {f}));
            const StepChart& chart = shown.chart;
            if (usualMs < 130) {
                QCOMPARE(chart.usualStepNs(), 70e6);
                QVERIFY2(chart.title().contains("usual 70.00 ms"), qPrintable(chart.title()));
            } else {
                QCOMPARE(chart.usualStepNs(), 0.0); // the usual step is the median: nothing to add
                QVERIFY2(!chart.title().contains("usual"), qPrintable(chart.title()));
            }
        }
    }

    void exportWritesAValidPngAndSvg() {
        auto w = window();
        const QString png = m_dir.filePath("timeline.png"), svg = m_dir.filePath("timeline.svg");
        QString error;
        QVERIFY2(exportView(*w->exportable(MainWindow::View::Timeline), png, &error), qPrintable(error));
        QVERIFY2(exportView(*w->exportable(MainWindow::View::Timeline), svg, &error), qPrintable(error));
        QImage img(png);
        QVERIFY(!img.isNull());
        QCOMPARE(img.width(), w->timeline()->width());
        QCOMPARE(img.height(), w->timeline()->height() + exportTitleHeight(w->timeline()));
        QVERIFY(distinctColors(img) > 8);
        QSvgRenderer renderer(svg);
        QVERIFY(renderer.isValid());
        // Coordinates are the view's pixels (the physical size is written in mm at 96 dpi, the CSS pixel).
        QCOMPARE(int(renderer.viewBoxF().width()), w->timeline()->width());
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        // The title line explains the image: capture, job and time range.
        const QString title = w->timeline()->exportTitle();
        QVERIFY(title.contains("anomalies") &&
                title.contains(QString::fromStdString(w->viewState()->jobData()->info().id)));
        QVERIFY(text.contains("<title>" + title.toHtmlEscaped().toUtf8() + "</title>") ||
                text.contains(title.toHtmlEscaped().toUtf8()));
        // Writing into a folder that does not exist fails with a message, not a crash.
        QVERIFY(!exportView(*w->exportable(MainWindow::View::Steps), m_dir.filePath("no/such/dir/x.png"), &error));
        QVERIFY(error.contains("no/such/dir"));
    }

    void copyingAViewPutsItsImageOnTheClipboard() {
        auto w = window();
        copyViewToClipboard(*w->exportable(MainWindow::View::Topology));
        const QImage img = QApplication::clipboard()->image();
        if (img.isNull()) QSKIP("this platform plugin has no clipboard");
        QCOMPARE(img.width(), w->topologyView()->width());
    }

    void theThreeViewsRenderDifferentNonEmptyImages() {
        auto w = window();
        const QSize size(900, 500);
        QList<QImage> images;
        for (auto v : {MainWindow::View::Timeline, MainWindow::View::Steps, MainWindow::View::Topology}) {
            w->showView(v);
            QApplication::processEvents();
            QImage img = renderViewImage(*w->exportable(v), size);
            QCOMPARE(img.width(), size.width());
            QVERIFY2(distinctColors(img) > 8, qPrintable(QString("view %1 looks blank").arg(int(v))));
            images << img;
        }
        QVERIFY(images[0] != images[1]);
        QVERIFY(images[1] != images[2]);
        QVERIFY(images[0] != images[2]);
    }

    void theHeadlessScreenshotRendersEachView() {
        const QString exe = guiBinary();
        if (!QFileInfo::exists(exe)) QSKIP("the llmprism executable is not built");
        QSet<QByteArray> seen;
        for (const QString view : {"timeline", "steps", "topology"}) {
            const QString out = m_dir.filePath("shot-" + view + ".png");
            QProcess p;
            p.start(exe, {"--screenshot", out, "--view", view, "--size", "800x500", m_capture});
            QVERIFY(p.waitForFinished(120000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            QImage img(out);
            QVERIFY(!img.isNull());
            QCOMPARE(img.width(), 800);
            QVERIFY(distinctColors(img) > 8);
            QFile f(out);
            QVERIFY(f.open(QIODevice::ReadOnly));
            seen.insert(f.readAll());
        }
        QCOMPARE(seen.size(), 3);
        // The whole window has the views' title strip above it (a grab has no title bar): capture, job, findings.
        {
            const QString out = m_dir.filePath("shot-window.png");
            QProcess p;
            p.start(exe, {"--screenshot", out, "--view", "window", "--size", "1280x720", m_capture});
            QVERIFY(p.waitForFinished(120000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            const QImage img(out);
            QCOMPARE(img.width(), 1280);
            QVERIFY2(img.height() > 720 + 10, qPrintable(QString::number(img.height())));
        }
        // A bad capture exits with 1 and says why; a bad option with 2.
        QProcess bad;
        bad.start(exe, {"--screenshot", m_dir.filePath("x.png"), m_dir.filePath("missing")});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 1);
        QVERIFY(bad.readAllStandardError().contains("missing"));
        QProcess opt;
        opt.start(exe, {"--screenshot", m_dir.filePath("x.png"), "--view", "nope", m_capture});
        QVERIFY(opt.waitForFinished(60000));
        QCOMPARE(opt.exitCode(), 2);
    }

    // A screenshot reads as a ticket (issue 42): tesseract (Debian's OCR) reads the capture's name, the job and
    // the finding's rank from the title strip of the default view at 1600x900 and 1280x720, and the finding's rank
    // among the row labels (the default view of a job with a finding shows that rank). Light and dark.
    void aScreenshotReadsAsATicket() {
        const QString exe = guiBinary(), ocr = QStandardPaths::findExecutable("tesseract");
        if (!QFileInfo::exists(exe)) QSKIP("the llmprism executable is not built");
        if (ocr.isEmpty()) QSKIP("tesseract is not installed (apt-get install tesseract-ocr)");
        const Report& report = m_session->report();
        const int j = jobWithFindings();
        QVERIFY(j >= 0);
        const JobInfo& job = report.jobs[std::size_t(j)];
        const auto rank = std::find_if(job.findings.begin(), job.findings.end(),
                                       [](const Finding& f) { return f.kind == "slow_rank"; });
        QVERIFY(rank != job.findings.end());
        const auto addr = IpAddr::parse(rank->ip);
        QVERIFY(addr);
        const Topology& topology = m_session->capture.topology;
        const auto nic = topology.nicByIp(*addr);
        QVERIFY(nic);
        const QString host = QString::fromStdString(topology.hosts[std::size_t(topology.nics[std::size_t(*nic)].host)].name);
        // Text of a part of the image, scaled 3x (tesseract reads 10-pixel type poorly at 1x).
        auto read = [&](const QImage& img, QRect part, const QString& name, int psm) {
            const QString file = m_dir.filePath(name + ".png");
            img.copy(part).scaled(part.size() * 3, Qt::IgnoreAspectRatio, Qt::SmoothTransformation).save(file);
            QProcess p;
            p.start(ocr, {file, "stdout", "--psm", QString::number(psm)});
            p.waitForFinished(60000);
            return QString::fromUtf8(p.readAllStandardOutput());
        };
        for (const char* theme : {"light", "dark"})
            for (const QSize size : {QSize(1600, 900), QSize(1280, 720)}) {
                const QString what = QString("%1 %2x%3").arg(theme).arg(size.width()).arg(size.height());
                const QString out = m_dir.filePath(QString("ticket-%1-%2.png").arg(theme).arg(size.width()));
                QProcess p;
                p.start(exe, {"--screenshot", out, "--size", QString("%1x%2").arg(size.width()).arg(size.height()),
                              "--theme", theme, m_capture});
                QVERIFY(p.waitForFinished(120000));
                QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
                const QImage img(out);
                QVERIFY(!img.isNull());
                const QString title = read(img, QRect(0, 0, img.width(), 26), "title", 7);
                for (const QString& expected : {QString("anomalies"), QString("job-%1").arg(j), host})
                    QVERIFY2(title.contains(expected), qPrintable(what + ": \"" + expected + "\" not in the title, read as: " + title));
                const QString labels = read(img, QRect(0, 26, 200, img.height() - 26), "labels", 6);
                QVERIFY2(labels.contains(host), qPrintable(what + ": " + host + " not among the rows, read as: " + labels));
            }
    }

    // --version and --help answer without a display (they aborted with exit 134 where no platform could start).
    void versionAndHelpWorkWithoutADisplay() {
        const QString exe = guiBinary();
        if (!QFileInfo::exists(exe)) QSKIP("the llmprism executable is not built");
        for (const char* flag : {"--version", "--help"}) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            for (const char* var : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(var);
            p.setProcessEnvironment(env);
            p.start(exe, {flag});
            QVERIFY(p.waitForFinished(60000));
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QCOMPARE(p.exitCode(), 0);
            const QByteArray out = p.readAllStandardOutput();
            QVERIFY2(out.contains(std::strcmp(flag, "--version") == 0 ? "LLMPrism" : "--screenshot"), out.constData());
        }
    }

    void aBadCaptureShowsAnErrorAndTheAppLives() {
        auto w = window();
        // topology.json with a syntax error: the dialog names the file and the line.
        const QString dir = m_dir.filePath("badtopo");
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(QFile::copy(m_capture + "/flows.csv", dir + "/flows.csv"));
        QFile topo(dir + "/topology.json");
        QVERIFY(topo.open(QIODevice::WriteOnly));
        topo.write("{ \"hosts\": [\n  { \"name\": \"node-0001\", \"nics\": [ { \"ip\": 12 } ] }\n");
        topo.close();
        QSignalSpy failed(w->loader(), &CaptureLoader::failed);
        w->openPath(dir);
        QVERIFY(failed.wait(60000));
        auto* box = w->findChild<QMessageBox*>("errorDialog");
        QVERIFY(box);
        QVERIFY2(box->informativeText().contains("topology.json"), qPrintable(box->informativeText()));
        QVERIFY2(box->informativeText().contains("line"), qPrintable(box->informativeText()));
        box->close();
        // The session shown before stays, and the window still works.
        QCOMPARE(w->session(), m_session);
        QVERIFY(w->isVisible());
        w->timeline()->fitAll();
        w->timeline()->repaint();
        // A file that is not a capture at all.
        const QString junk = m_dir.filePath("junk.prism");
        QFile j(junk);
        QVERIFY(j.open(QIODevice::WriteOnly));
        j.write("\x01\x02 not a session");
        j.close();
        QSignalSpy failed2(w->loader(), &CaptureLoader::failed);
        w->openPath(junk);
        QVERIFY(failed2.wait(60000));
        QVERIFY(w->lastError().contains("junk.prism"));
        QCOMPARE(w->session(), m_session);
    }

    void splittersAndThemePersist() {
        QList<int> sizes;
        {
            auto w = window();
            auto* split = w->findChild<QSplitter*>("mainSplitter");
            QVERIFY(split);
            split->setSizes({300, 900, 300});
            sizes = split->sizes();
            w->close();
        }
        {
            auto w = window();
            QCOMPARE(w->findChild<QSplitter*>("mainSplitter")->sizes(), sizes);
        }
        QSettings().setValue("view/theme", int(MainWindow::Theme::Dark));
        {
            MainWindow w;
            QVERIFY(isDarkPalette(QApplication::palette()));
        }
        MainWindow::setTheme(MainWindow::Theme::Light);
        QSettings().setValue("view/theme", int(MainWindow::Theme::Light));
        QVERIFY(!isDarkPalette(QApplication::palette()));
    }
};

QTEST_MAIN(TestViews)
#include "tst_gui_views.moc"
