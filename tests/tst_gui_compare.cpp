// The compare window (File ▸ Compare With…, docs/GUI.md "Comparing two runs") on simulated pairs: both timelines
// aligned by step and zoomed together, the step chart of both runs, the breakdown as a diff table, the
// differences, the topology coloured by difference, one exported image; opened from the main window, with a bad
// file refused by name. LLMPRISM_COMPARE_SHOT=PATH also writes the exported image there (docs/screenshots), and
// LLMPRISM_COMPARE_STEP_SHOT=PATH that of a pause in one step, shown.
#include "analysis/compare.h"
#include "capture_loader.h"
#include "compare_views.h"
#include "compare_window.h"
#include "main_window.h"
#include "test_util.h"
#include "timeline_view.h"
#include "view_state.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QLabel>
#include <QMenuBar>
#include <QSet>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace prism;
using namespace prism::ui;

namespace {

// A run of `preset` (seed), with anomalies spanning every step after the first unless they name their steps, as the
// loader makes it.
std::shared_ptr<AnalysisSession> session(const char* preset, int seed, const std::vector<std::string>& anomalies = {},
                                         sim::SimResult* simOut = nullptr) {
    sim::SimConfig config = test::presetConfig(preset, seed);
    config.anomalies.clear();
    int index = 0;
    for (const std::string& a : anomalies)
        config.anomalies.push_back(sim::parseAnomaly(
            a.find("steps=") != std::string::npos ? a : a + ",steps=1-" + std::to_string(config.jobs.at(0).steps - 1),
            config, std::uint64_t(seed), index++));
    sim::SimResult r = sim::simulate(config);
    auto s = std::make_shared<AnalysisSession>();
    s->capture = test::captureOf(r);
    s->source = QStringLiteral("%1 seed %2%3").arg(preset).arg(seed).arg(anomalies.empty() ? "" : " (slowed)");
    s->sources = {s->source};
    s->capture.source = s->source.toStdString();
    s->analysis = runAnalysis(s->capture);
    s->buildLod();
    if (simOut) *simOut = std::move(r);
    return s;
}

int distinctColors(const QImage& img) {
    QSet<QRgb> colors;
    for (int y = 0; y < img.height(); y += 3)
        for (int x = 0; x < img.width(); x += 3) colors.insert(img.pixel(x, y));
    return int(colors.size());
}

// The window comparing `a` with `b`, shown at the size of the screenshot in docs/.
void showRuns(CompareWindow& w, const SessionPtr& a, const SessionPtr& b) {
    w.resize(1500, 980);
    w.setRuns(a, b);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
}

int topologyNic(const AnalysisSession& s, const std::string& ip) {
    const auto n = s.capture.topology.nicByIp(*IpAddr::parse(ip));
    return n ? *n : -1;
}

} // namespace

class TestGuiCompare : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // A clean run against the same job with a slowed GPU: every part of the window says the same thing.
    void windowShowsWhatChanged() {
        sim::SimResult truth;
        const auto a = session("tiny", 11), b = session("tiny", 12, {"slow_rank:factor=1.5"}, &truth);
        CompareWindow w;
        showRuns(w, a, b);
        QCOMPARE(w.pairCount(), 1);
        const JobComparison* j = w.currentJob();
        QVERIFY(j && !j->differences.empty());
        QCOMPARE(j->differences.front().what, std::string("compute"));
        QVERIFY(w.summaryText().contains("Main difference: compute"));
        // The two timelines show the two runs' jobs.
        QVERIFY(w.timelineA()->jobData() && w.timelineB()->jobData());
        QCOMPARE(&w.timelineA()->jobData()->session(), a.get());
        QCOMPARE(&w.timelineB()->jobData()->session(), b.get());
        // The breakdown as a diff table: step, compute, PP, DP sync, waiting, each with A, B and the change.
        QTableWidget* bd = w.breakdownTable();
        QCOMPARE(bd->rowCount(), 5);
        QCOMPARE(bd->item(0, 0)->text(), QString("Median step"));
        QVERIFY(bd->item(0, 3)->text().startsWith("+"));
        QCOMPARE(bd->item(4, 0)->text(), QString("Waiting"));
        // The differences, largest first, the first the slowed TP group.
        QTableWidget* diffs = w.differencesTable();
        QCOMPARE(diffs->rowCount(), int(j->differences.size()));
        QCOMPARE(diffs->item(0, 1)->text(), QString("compute"));
        const Finding& slowed = truth.truth.jobs[0].anomalies[0];
        QVERIFY2(diffs->item(0, 2)->text().contains(QString::fromStdString(b->capture.topology.hosts.at(
                     std::size_t(b->capture.topology.nics.at(std::size_t(topologyNic(*b, slowed.ip))).host)).name)),
                 qPrintable(diffs->item(0, 2)->text()));
        QVERIFY(diffs->item(0, 3)->text().startsWith("+"));
        // The topology: the slowed GPUs red (a positive change), a GPU elsewhere not.
        QVERIFY(w.topology()->deltaOfNic(topologyNic(*b, slowed.ip)) > 0);
        QVERIFY(!w.topology()->nicRect(topologyNic(*b, slowed.ip)).isEmpty());
        int unchanged = 0;
        for (const RankTimeline& r : b->analysis.jobs[0].timeline.ranks)
            unchanged += w.topology()->deltaOfNic(topologyNic(*b, r.ip)) == 0;
        QCOMPARE(unchanged, 24); // 3 of the 4 hosts
        // A click on a difference finds its rank in both timelines.
        w.showDifference(0);
        QCOMPARE(w.timelineB()->jobData()->rankByIp(j->differences.front().where.ip) >= 0, true);
    }

    // Zoomed together, aligned by step: the other timeline shows the same step at the left edge, over the same span;
    // a click on the step chart shows that step in both.
    void timelinesFollowEachOther() {
        const auto a = session("tiny", 11), b = session("tiny", 12, {"slow_rank:factor=1.5"});
        CompareWindow w;
        showRuns(w, a, b);
        const auto& sa = w.timelineA()->jobData()->steps();
        const auto& sb = w.timelineB()->jobData()->steps();
        QVERIFY(sa.size() >= 10 && sb.size() >= 10);
        w.timelineA()->setRange(sa[5].startNs, sa[5].startNs + 30'000'000);
        QCOMPARE(w.timelineB()->rangeStart(), sb[5].startNs);
        QCOMPARE(w.timelineB()->rangeEnd() - w.timelineB()->rangeStart(), std::int64_t(30'000'000));
        // B leads: A follows the same way.
        w.timelineB()->setRange(sb[8].startNs + 1000, sb[8].startNs + 1000 + 50'000'000);
        QCOMPARE(w.timelineA()->rangeStart(), sa[8].startNs + 1000);
        QCOMPARE(w.timelineA()->rangeEnd() - w.timelineA()->rangeStart(), std::int64_t(50'000'000));
        // The step chart: a click on step 12 zooms both to it.
        CompareStepChart* chart = w.stepChart();
        const int x = int(std::lround(chart->xOfStep(12)));
        QCOMPARE(chart->stepAtX(x), 12);
        QTest::mouseClick(chart, Qt::LeftButton, {}, QPoint(x, chart->height() / 2));
        QVERIFY(w.timelineA()->rangeStart() <= sa[12].startNs && w.timelineA()->rangeEnd() >= sa[12].endNs);
        QVERIFY(w.timelineB()->rangeStart() <= sb[12].startNs);
        QVERIFY(w.timelineB()->rangeStart() >= sb[10].startNs);
        // Swapping makes B the baseline: the slowdown becomes a speed-up.
        w.swapRuns();
        QCOMPARE(w.runA(), SessionPtr(b));
        QVERIFY(w.currentJob()->differences.front().deltaMsPerStep < 0);
    }

    // A pause before step 12 of B: the first difference says step 12 where it is, and a click on it shows that step
    // (a step either side) in both timelines.
    void aDifferenceInOneStepShowsThatStep() {
        const auto a = session("tiny", 11), b = session("tiny", 12, {"slow_step:steps=12,pause_ms=300"});
        CompareWindow w;
        showRuns(w, a, b);
        const JobComparison* j = w.currentJob();
        QVERIFY(j && !j->differences.empty());
        QCOMPARE(j->differences.front().firstStep, 12);
        QVERIFY2(w.differencesTable()->item(0, 2)->text().contains("step 12"),
                 qPrintable(w.differencesTable()->item(0, 2)->text()));
        w.showDifference(0);
        const auto& sb = w.timelineB()->jobData()->steps();
        const auto& sa = w.timelineA()->jobData()->steps();
        QVERIFY(w.timelineB()->rangeStart() <= sb[12].startNs && w.timelineB()->rangeEnd() >= sb[12].endNs);
        QVERIFY(w.timelineB()->rangeStart() >= sb[10].startNs && w.timelineB()->rangeEnd() <= sb[14].endNs);
        QVERIFY(w.timelineA()->rangeStart() <= sa[11].endNs && w.timelineA()->rangeStart() >= sa[10].startNs);
        if (qEnvironmentVariableIsSet("LLMPRISM_COMPARE_STEP_SHOT"))
            QVERIFY(w.exportImage(qEnvironmentVariable("LLMPRISM_COMPARE_STEP_SHOT")));
    }

    // A slow link: the NIC outlined on the topology, the first row a link; the window exported as one image with
    // its title line.
    void slowLinkAndExport() {
        sim::SimResult truth;
        const auto a = session("tiny", 11), b = session("tiny", 12, {"slow_link:factor=3"}, &truth);
        CompareWindow w;
        showRuns(w, a, b);
        const std::string& ip = truth.truth.jobs[0].anomalies[0].ip;
        QCOMPARE(w.differencesTable()->item(0, 1)->text(), QString("link"));
        QVERIFY(w.differencesTable()->item(0, 2)->text().contains(QString::fromStdString(ip)));
        QVERIFY(w.differencesTable()->item(0, 4)->text().contains("Gb/s"));
        QVERIFY(w.topology()->linkChanged(topologyNic(*b, ip)));
        int outlined = 0;
        for (std::size_t n = 0; n < b->capture.topology.nics.size(); ++n) outlined += w.topology()->linkChanged(int(n));
        QCOMPARE(outlined, 1);
        const QString path = m_dir.filePath("compare.png");
        QString error;
        QVERIFY2(w.exportImage(path, &error), qPrintable(error));
        const QImage image(path);
        QVERIFY(image.width() >= w.centralWidget()->width() && image.height() > w.centralWidget()->height());
        QVERIFY(distinctColors(image) > 50);
        QVERIFY(!w.exportImage(m_dir.filePath("no/such/dir/x.png"), &error));
        QVERIFY(error.contains("no/such/dir/x.png"));
        if (qEnvironmentVariableIsSet("LLMPRISM_COMPARE_SHOT")) {
            w.timelineA()->zoomToSteps(8, 10);
            QVERIFY(w.exportImage(qEnvironmentVariable("LLMPRISM_COMPARE_SHOT")));
        }
    }

    // From the main window: File ▸ Compare With… loads the baseline in the background and compares it with the
    // shown run; a file that is no run is refused by name.
    // A run opened whole from files holds no records: its links are compared on the files read again, and when
    // they changed meanwhile the rest is compared without the links, and the window says why, naming the file.
    void linksOfAChangedCaptureAreNotComparedAndTheWindowSaysWhy() {
        const QString capture = m_dir.filePath("changing");
        sim::writeCapture(sim::simulate(test::presetConfig("tiny", 12)), capture.toStdString());
        const SessionPtr b = CaptureLoader::loadNow(capture);
        QVERIFY(b->recordsReleased);
        const auto a = session("tiny", 11);
        {
            CompareWindow w;
            showRuns(w, a, b);
            QVERIFY(w.comparison().jobs.at(0).linkResidual > 1.0); // read again: the links were compared
            QVERIFY(w.statusBar()->currentMessage().isEmpty());
        }
        {
            QFile f(capture + "/flows.csv");
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray first = f.readAll().split('\n').at(1);
            f.close();
            QVERIFY(f.open(QIODevice::Append));
            f.write(first + "\n");
        }
        CompareWindow w;
        showRuns(w, a, b);
        const QString message = w.statusBar()->currentMessage();
        QVERIFY2(message.contains("Links not compared") && message.contains("flows.csv") &&
                     message.contains("changed since it was opened"),
                 qPrintable(message));
        QCOMPARE(w.comparison().jobs.at(0).linkResidual, 1.0);
        QVERIFY(QString::fromStdString(w.comparison().jobs.at(0).notes.back()).contains("Links not compared"));
        bool headline = false; // the window's headline says it too (and so does its exported image)
        for (const QLabel* l : w.findChildren<QLabel*>())
            headline = headline || l->text().contains("Links not compared");
        QVERIFY(headline);
        w.swapRuns(); // still said, the other way round
        QVERIFY(w.statusBar()->currentMessage().contains("Links not compared"));
        QCOMPARE(QApplication::overrideCursor(), nullptr);
    }

    void openedFromTheMainWindow() {
        const QString capture = m_dir.filePath("baseline");
        sim::writeCapture(sim::simulate([] {
                              sim::SimConfig c = test::presetConfig("tiny", 11);
                              c.anomalies.clear();
                              return c;
                          }()),
                          capture.toStdString());
        MainWindow mw;
        QVERIFY(!mw.compareWith(capture)); // nothing shown yet
        mw.setSession(session("tiny", 12, {"slow_rank:factor=1.5"}));
        QAction* action = nullptr;
        for (QAction* a : mw.menuBar()->actions().front()->menu()->actions())
            if (a->text().startsWith("Compare &With")) action = a;
        QVERIFY(action && action->isEnabled());
        CompareWindow* w = mw.compareWith(capture + "/topology.json");
        QVERIFY(w);
        QSignalSpy loaded(w, &CompareWindow::loaded);
        QSignalSpy messages(w->statusBar(), &QStatusBar::messageChanged);
        QVERIFY(loaded.wait(60000));
        bool readInTheBackground = false; // the baseline holds no records: read for the links on a worker
        for (const QList<QVariant>& m : messages)
            readInTheBackground = readInTheBackground || m.at(0).toString().contains("Reading the flow records");
        QVERIFY(readInTheBackground);
        QCOMPARE(w->pairCount(), 1);
        QCOMPARE(w->runB(), mw.session());
        // Picked by its topology.json, the baseline is the capture folder, named by it.
        QVERIFY2(w->windowTitle().startsWith("Compare baseline with "), qPrintable(w->windowTitle()));
        QCOMPARE(QFileInfo(w->runA()->source).fileName(), QString("baseline"));
        QCOMPARE(w->currentJob()->differences.front().what, std::string("compute"));
        // The baseline was opened whole and holds no records: its links were compared on its files read again,
        // as a run that holds them compares.
        QVERIFY(w->runA()->recordsReleased);
        QCOMPARE(w->runA()->capture.flows.size(), std::size_t(0));
        const Capture held = loadCapture(capture.toStdString());
        const Analysis heldAnalysis = runAnalysis(held);
        const Comparison direct =
            compareRuns(RunData{w->runA()->source.toStdString(), &held, &heldAnalysis},
                        RunData{mw.session()->source.toStdString(), &mw.session()->capture, &mw.session()->analysis});
        QCOMPARE(comparisonToJson(w->comparison()).dump(), comparisonToJson(direct).dump());
        QVERIFY(direct.jobs.at(0).linkResidual > 1.0); // the links were compared
        QCOMPARE(w->comparison().jobs.at(0).linkResidual, direct.jobs.at(0).linkResidual);
        w->close();

        const QString text = m_dir.filePath("readme.txt");
        test::writeBytes(text.toStdString(), "not a run\n");
        CompareWindow* bad = mw.compareWith(text);
        QSignalSpy failed(bad, &CompareWindow::loadFailed);
        QVERIFY(failed.wait(60000));
        QVERIFY2(failed.front().front().toString().contains("readme.txt"), qPrintable(failed.front().front().toString()));
        QCOMPARE(bad->pairCount(), 0);
        bad->close();

        // A baseline larger than the memory budget is analysed in stages: one window of one job, no whole run.
        qputenv("LLMPRISM_MEMORY", "2M");
        CompareWindow* staged = mw.compareWith(QStringLiteral(LLMPRISM_SOURCE_DIR "/samples/anomalies"));
        QSignalSpy refused(staged, &CompareWindow::loadFailed);
        QVERIFY(refused.wait(60000));
        qunsetenv("LLMPRISM_MEMORY");
        QVERIFY2(refused.front().front().toString().contains("analysed in stages"),
                 qPrintable(refused.front().front().toString()));
        QCOMPARE(staged->pairCount(), 0);
        staged->close();
    }
};

QTEST_MAIN(TestGuiCompare)
#include "tst_gui_compare.moc"
