// The Gantt timeline: navigation (wheel, drag, keys, undo), selection, search, groups, level of detail, the
// time axis, the rows-image cache and the dark palette. Runs on a simulated `anomalies` capture.
#include "capture_loader.h"
#include "timeline_view.h"
#include "view_state.h"
#include "view_style.h"

#include <QApplication>
#include <QPainter>
#include <QProcess>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>
#include <cmath>

using namespace prism;
using namespace prism::ui;

namespace {

void sendWheel(QWidget* w, QPoint pos, int delta, Qt::KeyboardModifiers mods = Qt::NoModifier) {
    // QtTest 6.4 has no wheel helper.
    QWheelEvent ev(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, mods,
                   Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &ev);
}

void sendMouse(QWidget* w, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons,
               Qt::KeyboardModifiers mods = Qt::NoModifier) {
    QMouseEvent ev(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button, buttons, mods);
    QApplication::sendEvent(w, &ev);
}

void drag(QWidget* w, QPoint from, QPoint to, Qt::MouseButton button, Qt::KeyboardModifiers mods = Qt::NoModifier) {
    sendMouse(w, QEvent::MouseButtonPress, from, button, button, mods);
    const int n = 8;
    for (int i = 1; i <= n; ++i)
        sendMouse(w, QEvent::MouseMove, from + (to - from) * i / n, Qt::NoButton, button, mods);
    sendMouse(w, QEvent::MouseButtonRelease, to, button, Qt::NoButton, mods);
}

void click(QWidget* w, QPoint pos) { drag(w, pos, pos, Qt::LeftButton); }

// One nanosecond-exact comparison allowance: a pixel's worth of time.
std::int64_t pixelNs(const TimelineView& v) { return (v.rangeEnd() - v.rangeStart()) / v.plotRect().width() + 1; }

} // namespace

class TestTimeline : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    SessionPtr m_session;

    struct Fixture {
        ViewState state;
        TimelineView view{&state};
        explicit Fixture(const SessionPtr& s) {
            view.resize(1200, 700);
            view.show();
            state.setSession(s);
        }
        const JobData& data() const { return *state.jobData(); }
    };

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const QString capture = m_dir.filePath("anomalies");
        QProcess sim;
        sim.start(LLMPRISM_CLI, {"simulate", "--preset", "anomalies", "--seed", "5", "--out", capture});
        QVERIFY(sim.waitForFinished(180000));
        QCOMPARE(sim.exitCode(), 0);
        m_session = CaptureLoader::loadNow(capture);
        QVERIFY(m_session);
        QVERIFY(!m_session->report().jobs.empty());
        QCOMPARE(m_session->lod.size(), m_session->analysis.jobs.size());
        QVERIFY(m_session->analysis.jobs[0].timeline.ranks.at(0).segments.empty()); // packed, as the views hold it
        QVERIFY(!m_session->analysis.jobs[0].timeline.ranks.at(0).packed.empty());
        QVERIFY(m_session->recordsReleased);
    }

    // A rank's traffic (the details panel) is what it sent and received with the job's other ranks: the bytes of
    // the job's records that have it at one end and a rank at the other, counted from the files.
    void aRanksTrafficIsItsRecordsWithTheJobsRanks() {
        Fixture f(m_session);
        const std::shared_ptr<const Capture> c = m_session->withRecords();
        QVERIFY(c->flows.size() > 0);
        const JobTimeline& tl = f.data().timeline();
        std::vector<int> rankOf(c->flows.endpoints.size(), -1);
        for (std::size_t r = 0; r < tl.ranks.size(); ++r) rankOf.at(tl.ranks[r].nic) = int(r);
        std::vector<std::uint64_t> expect(tl.ranks.size(), 0);
        const RecognizedJob& rj = m_session->analysis.recognition.jobs.at(0);
        QVERIFY(rj.records.empty() && rj.listed() == rj.recordCount); // held packed once analysed
        rj.forEachRecord([&](std::uint32_t i) {
            const int a = rankOf.at(c->flows.src[i]), b = rankOf.at(c->flows.dst[i]);
            if (a < 0 || b < 0) return;
            expect[std::size_t(a)] += c->flows.bytes[i];
            expect[std::size_t(b)] += c->flows.bytes[i];
        });
        std::uint64_t total = 0;
        for (std::size_t r = 0; r < tl.ranks.size(); ++r) {
            QCOMPARE(f.data().bytesOfRank(int(r)), expect[r]);
            total += expect[r];
        }
        QVERIFY(total > 0);
    }

    void aJobShowsOneRowPerRankFittedToTheJobSpan() {
        Fixture f(m_session);
        QVERIFY(f.view.jobData());
        int rankRows = 0;
        for (const auto& r : f.view.rows()) rankRows += r.type == TimelineView::Row::Rank;
        QCOMPARE(rankRows, f.data().rankCount());
        // Fit all: the whole job is in view, with at most a small margin.
        const auto& tl = f.data().timeline();
        QVERIFY(f.view.rangeStart() <= tl.startNs);
        QVERIFY(f.view.rangeEnd() >= tl.endNs);
        QVERIFY(f.view.rangeEnd() - f.view.rangeStart() < (tl.endNs - tl.startNs) * 11 / 10);
    }

    void aWheelNotchZoomsInAroundTheCursor() {
        Fixture f(m_session);
        const QRect plot = f.view.plotRect();
        const QPoint at(plot.left() + plot.width() * 3 / 10, plot.center().y());
        const std::int64_t anchor = f.view.timeAtX(at.x());
        const std::int64_t span = f.view.rangeEnd() - f.view.rangeStart();
        sendWheel(&f.view, at, 120);
        const std::int64_t zoomed = f.view.rangeEnd() - f.view.rangeStart();
        QVERIFY2(std::abs(double(zoomed) - double(span) / 1.25) < double(span) * 0.01,
                 qPrintable(QString("span %1 -> %2").arg(span).arg(zoomed)));
        // The time under the cursor stays under the cursor.
        QVERIFY(std::abs(f.view.timeAtX(at.x()) - anchor) <= pixelNs(f.view));
        // Ctrl zooms finer, Shift faster; wheel down zooms out.
        sendWheel(&f.view, at, 120, Qt::ControlModifier);
        const std::int64_t fine = f.view.rangeEnd() - f.view.rangeStart();
        QVERIFY(fine < zoomed && fine > zoomed * 9 / 10);
        sendWheel(&f.view, at, 120, Qt::ShiftModifier);
        const std::int64_t fast = f.view.rangeEnd() - f.view.rangeStart();
        QVERIFY(fast < fine * 6 / 10);
        sendWheel(&f.view, at, -120);
        QVERIFY(f.view.rangeEnd() - f.view.rangeStart() > fast);
        QVERIFY(std::abs(f.view.timeAtX(at.x()) - anchor) <= 2 * pixelNs(f.view));
    }

    void draggingARangeZoomsToItAndBackspaceUndoes() {
        Fixture f(m_session);
        const QRect plot = f.view.plotRect();
        const int x1 = plot.left() + plot.width() / 4, x2 = plot.left() + plot.width() / 2;
        const std::int64_t t1 = f.view.timeAtX(x1), t2 = f.view.timeAtX(x2);
        const std::int64_t before0 = f.view.rangeStart(), before1 = f.view.rangeEnd();
        const std::int64_t slack = pixelNs(f.view);
        drag(&f.view, QPoint(x1, plot.center().y()), QPoint(x2, plot.center().y()), Qt::RightButton);
        QVERIFY(std::abs(f.view.rangeStart() - t1) <= slack);
        QVERIFY(std::abs(f.view.rangeEnd() - t2) <= slack);
        // Shift+left drag and a left drag on the time axis do the same.
        const std::int64_t span = f.view.rangeEnd() - f.view.rangeStart();
        drag(&f.view, QPoint(x1, plot.center().y()), QPoint(x2, plot.center().y()), Qt::LeftButton, Qt::ShiftModifier);
        QVERIFY(f.view.rangeEnd() - f.view.rangeStart() < span * 6 / 10);
        const QRect axis = f.view.axisRect();
        const std::int64_t span2 = f.view.rangeEnd() - f.view.rangeStart();
        drag(&f.view, QPoint(x1, axis.center().y()), QPoint(x2, axis.center().y()), Qt::LeftButton);
        QVERIFY(f.view.rangeEnd() - f.view.rangeStart() < span2 * 6 / 10);
        // Backspace walks back through the zooms.
        f.view.setFocus();
        QTest::keyClick(&f.view, Qt::Key_Backspace);
        QTest::keyClick(&f.view, Qt::Key_Backspace);
        QTest::keyClick(&f.view, Qt::Key_Backspace);
        QCOMPARE(f.view.rangeStart(), before0);
        QCOMPARE(f.view.rangeEnd(), before1);
        QVERIFY(!f.view.undoZoom());
    }

    void draggingWithTheLeftButtonPansWithoutZooming() {
        Fixture f(m_session);
        sendWheel(&f.view, f.view.plotRect().center(), 600); // zoom in first so there is room to pan
        const std::int64_t t0 = f.view.rangeStart(), span = f.view.rangeEnd() - t0;
        const QPoint c = f.view.plotRect().center();
        drag(&f.view, c, c - QPoint(200, 0), Qt::LeftButton);
        QCOMPARE(f.view.rangeEnd() - f.view.rangeStart(), span);
        const std::int64_t expected = t0 + std::int64_t(200.0 * double(span) / f.view.plotRect().width());
        QVERIFY(std::abs(f.view.rangeStart() - expected) <= pixelNs(f.view));
    }

    void keysZoomPanAndFit() {
        Fixture f(m_session);
        f.view.setFocus();
        const std::int64_t full = f.view.rangeEnd() - f.view.rangeStart();
        QTest::keyClick(&f.view, Qt::Key_W);
        const std::int64_t in = f.view.rangeEnd() - f.view.rangeStart();
        QVERIFY(in < full);
        const std::int64_t t0 = f.view.rangeStart();
        QTest::keyClick(&f.view, Qt::Key_D);
        QVERIFY(f.view.rangeStart() > t0);
        QTest::keyClick(&f.view, Qt::Key_A);
        QTest::keyClick(&f.view, Qt::Key_A);
        QVERIFY(f.view.rangeStart() < t0);
        QTest::keyClick(&f.view, Qt::Key_S);
        QVERIFY(f.view.rangeEnd() - f.view.rangeStart() > in);
        QTest::keyClick(&f.view, Qt::Key_F);
        QCOMPARE(f.view.rangeEnd() - f.view.rangeStart(), full);
    }

    void clickingSelectsAndEscapeClears() {
        Fixture f(m_session);
        const auto& st = f.data().steps();
        if (st.empty()) QSKIP("the engine found no steps in this capture; step selection needs them");
        // A step in the step lane.
        const int s = int(st.size()) / 2;
        const int x = int(f.view.xOfTime(st[std::size_t(s)].startNs + st[std::size_t(s)].durationNs() / 2));
        click(&f.view, QPoint(x, f.view.stepLaneRect().center().y()));
        QCOMPARE(int(f.state.selection().kind), int(Selection::Kind::Step));
        QCOMPARE(f.state.selection().step, s);
        // A segment of the first rank.
        const int y = f.view.yOfRank(0);
        QVERIFY(y > 0);
        click(&f.view, QPoint(x, y));
        QCOMPARE(int(f.state.selection().kind), int(Selection::Kind::Segment));
        QCOMPARE(f.state.selection().rank, 0);
        const Segment seg = f.data().timeline().ranks[0].segment(std::size_t(f.state.selection().segment));
        QVERIFY(seg.startNs - pixelNs(f.view) * 3 <= f.view.timeAtX(x) &&
                f.view.timeAtX(x) <= seg.endNs + pixelNs(f.view) * 3);
        // Its tooltip names it.
        QVERIFY(f.view.describeAt(QPoint(x, y)).contains(f.data().rankLabel(0)));
        f.view.setFocus();
        QTest::keyClick(&f.view, Qt::Key_Escape);
        QVERIFY(f.state.selection().isNone());
    }

    void searchFindsRanksHostsAndSteps() {
        Fixture f(m_session);
        const JobData& d = f.data();
        const int last = d.rankCount() - 1;
        QVERIFY(f.view.search(d.rankLabel(last)));
        QCOMPARE(f.state.selection().rank, last);
        const int y = f.view.yOfRank(last);
        QVERIFY(f.view.plotRect().contains(QPoint(f.view.plotRect().center().x(), y)));
        QVERIFY(f.view.search(QString::fromStdString(d.timeline().ranks[0].ip)));
        QCOMPARE(f.state.selection().rank, 0);
        const int host = d.hostOfRank(last);
        QVERIFY(host >= 0);
        QVERIFY(f.view.search(QString::fromStdString(d.topology().hosts[std::size_t(host)].name)));
        QCOMPARE(int(f.state.selection().kind), int(Selection::Kind::Host));
        QVERIFY(!f.view.search("no-such-host-or-rank"));
        if (!d.steps().empty()) {
            const StepInfo& step = d.steps().back();
            QVERIFY(f.view.search(QString("step %1").arg(step.index)));
            QCOMPARE(f.state.selection().step, int(d.steps().size()) - 1);
            QVERIFY(f.view.rangeStart() <= step.startNs && step.endNs <= f.view.rangeEnd());
        }
    }

    // A job's default screenshot shows what is wrong in it: the first finding that names a rank scrolls that
    // rank's row into view (the slow rank of anomalies sits at stage 1, below the first screen), and the title
    // names the capture, the job, a range from the job's start and the findings in it.
    void theFindingsRankAndTheFindingsAreInTheDefaultView() {
        Fixture f(m_session);
        const int rank = f.view.revealFindingRank();
        QVERIFY(rank >= 0);
        const int y = f.view.yOfRank(rank);
        QVERIFY2(y >= f.view.plotRect().top() && y < f.view.plotRect().bottom(), qPrintable(QString::number(y)));
        f.view.fitAll();
        const QString title = f.view.exportTitle();
        QVERIFY2(title.contains("anomalies") && title.contains(QString::fromStdString(f.data().info().id)),
                 qPrintable(title));
        QVERIFY2(title.contains(" — 0 … ") || title.contains(" — 0 ns … ") || title.contains(" — 0 ms … "),
                 qPrintable(title));
        QVERIFY2(title.contains(f.data().rankLabel(rank)), qPrintable(title));
        QVERIFY2(title.contains(QString(" — %1 findings: ").arg(f.data().findingCount())), qPrintable(title));
    }

    // Rows fitted to the view are too thin for every label: the straggler's row is named (in red) before its
    // group's other rows (they named the second row of each group while the outlined row was the third).
    void fittedRowsNameTheStragglerFirst() {
        Fixture f(m_session);
        f.view.fitRows();
        f.view.fitAll();
        int straggler = -1;
        for (int r = 0; r < f.data().rankCount() && straggler < 0; ++r)
            if (f.data().isStraggler(r)) straggler = r;
        if (straggler < 0) QSKIP("the first job has no slow rank");
        QImage img(f.view.size(), QImage::Format_ARGB32);
        QPainter p(&img);
        f.view.render(p, f.view.size(), false);
        p.end();
        const int y = f.view.yOfRank(straggler), th = f.view.fontMetrics().height();
        int red = 0;
        for (int yy = std::max(0, y - th); yy < std::min(img.height(), y + th); ++yy)
            for (int x = 28; x < f.view.labelWidth() - 34; ++x) {
                const QColor c = img.pixelColor(x, yy);
                red += c.red() > 150 && c.green() < 110 && c.blue() < 110;
            }
        QVERIFY2(red > 10, qPrintable(QString("%1 red pixels by row %2").arg(red).arg(y)));
    }

    void clickingAGroupHeaderCollapsesAndExpandsIt() {
        Fixture f(m_session);
        const auto& rows = f.view.rows();
        auto header =
            std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.type != TimelineView::Row::Rank; });
        if (header == rows.end()) QSKIP("the first job has a single group: no headers to collapse");
        const int first = header->first, last = header->last;
        const std::size_t before = rows.size();
        const int y = f.view.plotRect().top() + header->y + header->h / 2;
        click(&f.view, QPoint(10, y));
        for (int r = first; r < last; ++r) QVERIFY(!f.view.isRankVisible(r));
        QVERIFY(f.view.rows().size() <= before - std::size_t(last - first));
        QVERIFY(f.view.isRankVisible(last < f.data().rankCount() ? last : 0) || last == f.data().rankCount());
        click(&f.view, QPoint(10, y));
        QVERIFY(f.view.isRankVisible(first));
        QCOMPARE(f.view.rows().size(), before);
    }

    void theLevelOfDetailAgreesWithTheSegments() {
        const JobTimeline& tl = m_session->analysis.jobs.front().timeline;
        TimelineIndex index;
        index.build(tl);
        QVERIFY(index.levels() > 1);
        const int width = 800;
        std::vector<std::uint8_t> lod(width), exact(width);
        for (double zoomOut : {1.0, 4.0, 16.0}) {
            // From the whole job (zoomOut 1) to windows where a column is finer than the base bucket.
            const std::int64_t span = std::int64_t(double(tl.endNs - tl.startNs) / zoomOut);
            const double nsPerPx = double(span) / width;
            int agree = 0, filled = 0;
            for (std::size_t r = 0; r < tl.ranks.size(); ++r) {
                index.columns(r, tl.startNs, nsPerPx, width, lod.data());
                index.columnsFromSegments(r, tl.startNs, nsPerPx, width, exact.data());
                for (int x = 0; x < width; ++x) {
                    if (exact[std::size_t(x)] == TimelineIndex::kEmpty) continue;
                    ++filled;
                    agree += (lod[std::size_t(x)] & TimelineIndex::kKindMask) ==
                        (exact[std::size_t(x)] & TimelineIndex::kKindMask);
                }
            }
            QVERIFY(filled > 0);
            // Zoomed out the pyramid samples buckets, so a column near a boundary may differ; most agree.
            QVERIFY2(agree >= filled * 8 / 10,
                     qPrintable(QString("zoom %1: %2 of %3").arg(zoomOut).arg(agree).arg(filled)));
            if (nsPerPx < index.baseBucketNs()) QCOMPARE(agree, filled);
        }
    }

    void theTimeAxisSpeaksHumanUnits() {
        const std::int64_t origin = 1'793'491'200'000'000'000;
        // A label reads back as its tick's time from the job start, in a unit that keeps it short.
        auto parse = [](QString label, double* ns) {
            if (label == "0") {
                *ns = 0;
                return true;
            }
            if (!label.startsWith('+')) return false;
            label.remove(0, 1);
            const QStringList parts = label.split(' ');
            if (parts.size() != 2) return false;
            const QMap<QString, double> units{{"ns", 1}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
            bool ok = false;
            const double v = parts[0].toDouble(&ok);
            if (!ok || !units.contains(parts[1]) || parts[0].section('.', 0, 0).size() > 4) return false;
            *ns = v * units[parts[1]];
            return true;
        };
        for (std::int64_t span :
             {std::int64_t(2'000'000'000), std::int64_t(3'000'000), std::int64_t(8'000), std::int64_t(400)}) {
            const std::int64_t t0 = origin + 1'000'000; // 1 ms after the job start
            const TimeAxis a = computeTimeAxis(t0, t0 + span, 1000, origin, false);
            QVERIFY(a.step > 0);
            const QString mant = QString::number(a.step).left(1);
            QVERIFY(mant == "1" || mant == "2" || mant == "5");
            int majors = 0;
            std::int64_t prev = INT64_MIN;
            for (const AxisTick& t : a.ticks) {
                QVERIFY(t.t >= t0 && t.t <= t0 + span);
                QVERIFY(t.t > prev);
                prev = t.t;
                if (!t.major) continue;
                ++majors;
                double ns = 0;
                QVERIFY2(parse(t.label, &ns), qPrintable(t.label));
                QVERIFY2(std::abs(ns - double(t.t - origin)) <= double(a.step) / 2,
                         qPrintable(QString("%1 at %2 ns").arg(t.label).arg(t.t - origin)));
            }
            QVERIFY(majors >= 3 && majors <= 12);
        }
        // Deep in a long job, labels become offsets from a named reference rather than 12-digit numbers.
        const std::int64_t far = origin + 3'600'000'000'000 + 123'456'789;
        const TimeAxis deep = computeTimeAxis(far, far + 2'000, 1000, origin, false);
        QVERIFY(deep.caption.contains("offsets from"));
        for (const AxisTick& t : deep.ticks)
            if (t.major) QVERIFY(t.label.size() <= 8);
        // Absolute time of day.
        const TimeAxis wall = computeTimeAxis(origin, origin + 10'000'000'000, 1000, origin, true);
        QVERIFY(wall.caption.contains("UTC"));
        QVERIFY(wall.ticks.front().label.contains(':'));
        // A day-long job counts like a clock: h:mm:ss from the job start at whole hours, and the time of day
        // with the date in absolute mode.
        const std::int64_t day = 26 * 3'600'000'000'000LL;
        const TimeAxis hours = computeTimeAxis(origin, origin + day, 1000, origin, false);
        QCOMPARE(hours.step % 3'600'000'000'000LL, std::int64_t(0));
        int majors = 0;
        for (const AxisTick& t : hours.ticks) {
            if (!t.major) continue;
            ++majors;
            const std::int64_t h = (t.t - origin) / 3'600'000'000'000LL;
            QCOMPARE(t.label, h ? QString("+%1:00:00").arg(h) : QString("0"));
        }
        QVERIFY(majors >= 3 && majors <= 14);
        const TimeAxis minutes = computeTimeAxis(origin, origin + 600'000'000'000LL, 1000, origin, false);
        QCOMPARE(minutes.step, 60'000'000'000LL);
        const TimeAxis wallDay = computeTimeAxis(origin, origin + day, 1000, origin, true);
        const QRegularExpression dateHour("^\\d\\d-\\d\\d \\d\\d:00$");
        for (const AxisTick& t : wallDay.ticks)
            if (t.major) QVERIFY2(dateHour.match(t.label).hasMatch(), qPrintable(t.label));
    }

    // Titles and tooltips read a long job's times as its clock does (h:mm:ss), not as raw seconds; short ones
    // keep their unit. Rates read in bits.
    void longTimesReadAsAClockAndRatesInBits() {
        QCOMPARE(formatNsAtStep(22'740'000'000'000LL, 1'000'000'000), QString("6:19:00"));
        QCOMPARE(formatNsAtStep(-915'000'000'000LL, 100'000'000), QString("-0:15:15.0"));
        QCOMPARE(formatNsAtStep(92'422'500'000'000LL, 10'000'000'000LL), QString("25:40:22"));
        QCOMPARE(formatNsAtStep(2'390'000'000LL, 10'000'000), QString("2.39 s"));
        QCOMPARE(formatNsAtStep(599'000'000'000LL, 1'000'000'000), QString("599 s"));
        // Throughput in bits, as the findings and link speeds read it (they said Gb/s, the details GB/s).
        QCOMPARE(formatRate(12'300'000'000ULL, 1'000'000'000), QString("98.40 Gb/s"));
        QCOMPARE(formatRate(1'000'000, 1'000'000'000), QString("8.0 Mb/s"));
    }

    void hoverAndSelectionRepaintWithoutRebuildingTheRows() {
        Fixture f(m_session);
        QVERIFY(QTest::qWaitForWindowExposed(&f.view));
        f.view.repaint();
        const int builds = f.view.rowsImageBuilds();
        QVERIFY(builds >= 1);
        f.state.select(Selection::ofRank(0), false);
        f.view.repaint();
        sendMouse(&f.view, QEvent::MouseMove, QPoint(f.view.plotRect().center().x(), f.view.yOfRank(0)), Qt::NoButton,
                  Qt::NoButton);
        f.view.repaint();
        QCOMPARE(f.view.rowsImageBuilds(), builds);
        sendWheel(&f.view, f.view.plotRect().center(), 120);
        f.view.repaint();
        QCOMPARE(f.view.rowsImageBuilds(), builds + 1);
    }

    void theDarkPaletteGivesADarkTimeline() {
        Fixture f(m_session);
        auto meanLightness = [&](const QPalette& pal) {
            f.view.setPalette(pal);
            QImage img(800, 500, QImage::Format_ARGB32_Premultiplied);
            QPainter p(&img);
            f.view.render(p, img.size(), false);
            p.end();
            double sum = 0;
            for (int y = 0; y < img.height(); y += 7)
                for (int x = 0; x < img.width(); x += 7) sum += QColor(img.pixel(x, y)).lightnessF();
            return sum / ((img.height() / 7 + 1) * (img.width() / 7 + 1));
        };
        QPalette dark;
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1f, 0x22));
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x31));
        dark.setColor(QPalette::Text, QColor(0xdf, 0xe1, 0xe5));
        dark.setColor(QPalette::WindowText, QColor(0xdf, 0xe1, 0xe5));
        QPalette light;
        light.setColor(QPalette::Base, Qt::white);
        light.setColor(QPalette::Window, QColor(0xef, 0xef, 0xef));
        light.setColor(QPalette::Text, Qt::black);
        light.setColor(QPalette::WindowText, Qt::black);
        const double d = meanLightness(dark), l = meanLightness(light);
        QVERIFY2(d < 0.45 && l > 0.55, qPrintable(QString("dark %1, light %2").arg(d).arg(l)));
    }
};

QTEST_MAIN(TestTimeline)
#include "tst_gui_timeline.moc"
