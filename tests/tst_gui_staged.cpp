// A capture larger than the memory budget opens analysed in stages (docs/GUI.md "Captures larger than memory"):
// the job list holds every job whole (the staged report), the timeline one window of one job's steps, loaded on
// demand — Later / Earlier move the window, choosing another job loads its first steps — and every window stays
// within the budget. The budget is LLMPRISM_MEMORY here (2 MiB: the anomalies sample needs ~3 MB whole). A
// ClickHouse table does the same against a real server (tests/clickhouse_server.h).
#include "analysis/staged.h"
#include "capture_loader.h"
#include "clickhouse_server.h"
#include "io/capture.h"
#include "io/clickhouse.h"
#include "list_models.h"
#include "main_window.h"
#include "model/units.h"
#include "notes_panel.h"
#include "store/notes.h"
#include "view_state.h"

#include <QDir>
#include <QFile>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

using namespace prism;
using namespace prism::ui;

class TestGuiStaged : public QObject {
    Q_OBJECT
    const QString m_capture = QStringLiteral(LLMPRISM_SOURCE_DIR "/samples/anomalies");

    // The window shown: its job's steps are numbered as the staged report numbers them and hold the steps asked
    // for, its records fit the budget, the other jobs have no timeline.
    static void checkWindow(const AnalysisSession& s) {
        QVERIFY(s.staged);
        const StagedCapture& st = *s.staged;
        QVERIFY(s.windowJob >= 0);
        QCOMPARE(s.report().jobs.size(), st.report.jobs.size());
        QVERIFY(s.capture.flows.size() * kStagedBytesPerRecord <= st.budget);
        const auto& steps = s.report().jobs[std::size_t(s.windowJob)].steps;
        for (int i = s.windowFirst; i <= s.windowLast; ++i)
            QVERIFY2(std::any_of(steps.begin(), steps.end(), [&](const StepInfo& x) { return x.index == i; }),
                     qPrintable(QString("step %1").arg(i)));
        for (std::size_t j = 0; j < s.analysis.jobs.size(); ++j)
            QCOMPARE(s.analysis.jobs[j].timeline.ranks.empty(), int(j) != s.windowJob);
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("LLMPrismTestStaged");
        QSettings().clear();
        qputenv("LLMPRISM_MEMORY", "2M");
    }

    void aCaptureLargerThanTheBudgetOpensInStages() {
        MainWindow w;
        w.show();
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPath(m_capture);
        QVERIFY(done.wait(60000));
        SessionPtr s = w.session();
        QVERIFY(s && s->staged);
        QCOMPARE(s->staged->budget, std::uint64_t(2) << 20);
        checkWindow(*s);
        // The largest job first, from its first step; the bar says which steps of how many.
        const StagedCapture& st = *s->staged;
        QCOMPARE(s->windowFirst, 0);
        QVERIFY(s->windowLast + 1 < int(st.report.jobs[std::size_t(s->windowJob)].steps.size()));
        QCOMPARE(w.viewState()->job(), s->windowJob);
        QVERIFY(w.windowBar()->isVisible());
        const QString bar = w.windowBar()->findChild<QLabel*>("windowLabel")->text();
        QVERIFY2(bar.contains(QString("of %1").arg(st.report.jobs[std::size_t(s->windowJob)].steps.size())) &&
                     bar.contains("analysed in stages"),
                 qPrintable(bar));
        // The job list: every job whole, as the staged analysis found it.
        QTreeView* jobs = w.jobList();
        QCOMPARE(jobs->model()->rowCount(), int(st.report.jobs.size()));
        auto* earlier = w.windowBar()->findChild<QPushButton*>("windowEarlier");
        auto* later = w.windowBar()->findChild<QPushButton*>("windowLater");
        QVERIFY(!earlier->isEnabled());
        QVERIFY(later->isEnabled());

        // Later: the next steps of the same job.
        const int job = s->windowJob, last = s->windowLast;
        later->click();
        QVERIFY(done.wait(60000));
        s = w.session();
        checkWindow(*s);
        QCOMPARE(s->windowJob, job);
        QCOMPARE(s->windowFirst, last + 1);
        QVERIFY(earlier->isEnabled());
        // Earlier: back to the start.
        earlier->click();
        QVERIFY(done.wait(60000));
        checkWindow(*w.session());
        QCOMPARE(w.session()->windowFirst, 0);

        // Another job chosen in the list: its first steps load.
        const int other = job == 0 ? 1 : 0;
        QVERIFY(other < int(st.report.jobs.size()));
        const QModelIndexList hit =
            jobs->model()->match(jobs->model()->index(0, 0), JobTableModel::JobRole, other, 1, Qt::MatchExactly);
        QVERIFY(!hit.isEmpty());
        jobs->selectionModel()->select(hit.first(), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QVERIFY(done.wait(60000));
        checkWindow(*w.session());
        QCOMPARE(w.session()->windowJob, other);
        QCOMPARE(w.viewState()->job(), other);

        // A session file would hold only the window: refused with what to do instead.
        QString error;
        QVERIFY(!w.saveSessionAs(QDir::temp().filePath("llmprism-staged-test.prism"), &error));
        QVERIFY2(error.contains("analysed in stages"), qPrintable(error));
    }

    // A ClickHouse table (File ▸ Open Database…) over the budget: analysed where it lies, one window at a time,
    // the same jobs and first window as the files give (a real server; skipped where none starts).
    void aTableLargerThanTheBudgetOpensInStages() {
        QTemporaryDir dir;
        prism::test::ClickHouseServer server;
        if (!server.start(dir.path())) QSKIP(qPrintable(server.skip));
        const Capture capture = loadCapture(m_capture.toStdString(), {});
        const std::string url = server.url("llmprism_gui.anomalies");
        exportToClickHouse(capture.flows, ClickHouseUrl::parse(url), false);
        const SessionPtr files = CaptureLoader::loadNow(m_capture);
        MainWindow w;
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        QSignalSpy failed(w.loader(), &CaptureLoader::failed);
        w.openPaths({QString::fromStdString(url), m_capture + "/topology.json"});
        QVERIFY2(done.wait(120000), failed.isEmpty() ? "" : qPrintable(failed.first().value(2).toString()));
        const SessionPtr s = w.session();
        QVERIFY(s && s->staged);
        checkWindow(*s);
        QCOMPARE(s->windowJob, files->windowJob);
        QCOMPARE(s->windowFirst, files->windowFirst);
        QCOMPARE(s->windowLast, files->windowLast);
        QCOMPARE(s->capture.flows.size(), files->capture.flows.size());
        QCOMPARE(s->report().jobs.size(), files->report().jobs.size());
        for (std::size_t j = 0; j < s->report().jobs.size(); ++j) {
            QCOMPARE(s->staged->report.jobs[j].gpus, files->staged->report.jobs[j].gpus);
            QCOMPARE(s->staged->report.jobs[j].steps.size(), files->staged->report.jobs[j].steps.size());
        }
        QVERIFY(s->capture.hasTopology);
        // Later: the next window from the server.
        w.windowBar()->findChild<QPushButton*>("windowLater")->click();
        QVERIFY(done.wait(120000));
        checkWindow(*w.session());
        QCOMPARE(w.session()->windowFirst, s->windowLast + 1);
        server.stop();
    }

    // Window loads follow the user's last choice: coming back to the job shown while another job's window loads
    // drops that load; Cancel goes back to the job shown; a window that cannot be read leaves the one shown, with
    // a message that says so; notes stay from window to window (they are placed by job and time).
    void windowLoadsFollowTheLastChoice() {
        QTemporaryDir dir; // a copy: its flows file is removed below
        for (const QString& f : QDir(m_capture).entryList(QDir::Files))
            QVERIFY(QFile::copy(m_capture + "/" + f, dir.filePath(f)));
        MainWindow w;
        w.show();
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        QSignalSpy cancelled(w.loader(), &CaptureLoader::cancelled);
        QSignalSpy failed(w.loader(), &CaptureLoader::failed);
        w.openPath(dir.path());
        QVERIFY(done.wait(60000));
        const SessionPtr first = w.session();
        QVERIFY(first && first->staged);
        const int shown = first->windowJob, other = shown == 0 ? 1 : 0;
        QVERIFY(other < int(first->staged->report.jobs.size()));
        QTreeView* jobs = w.jobList();
        auto pick = [&](int job) {
            const QModelIndexList hit =
                jobs->model()->match(jobs->model()->index(0, 0), JobTableModel::JobRole, job, 1, Qt::MatchExactly);
            QVERIFY(!hit.isEmpty());
            jobs->selectionModel()->select(hit.first(),
                                           QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        };
        // A note on the window shown.
        NotesPanel* notes = w.notesPanel();
        w.viewState()->select(Selection::ofRank(0), true);
        Note n;
        QVERIFY(notes->noteForSelection(&n));
        n.text = "rank 0 of the first window";
        QVERIFY(notes->addNote(n) > 0);
        QVERIFY(w.hasUnsavedNotes());

        // Another job, then back before its window came: the window shown stays, whatever the load did.
        pick(other);
        QVERIFY(w.loader()->isBusy());
        pick(shown);
        QVERIFY(QTest::qWaitFor([&] { return !w.loader()->isBusy(); }, 60000));
        QTest::qWait(50); // (anything posted after it)
        QCOMPARE(w.session(), first);
        QCOMPARE(w.viewState()->job(), shown);

        // Later steps of the same job: a new window, the note kept and still unsaved.
        auto* later = w.windowBar()->findChild<QPushButton*>("windowLater");
        later->click();
        QVERIFY(done.wait(60000));
        QVERIFY(w.session() != first);
        QCOMPARE(w.session()->windowJob, shown);
        QCOMPARE(notes->notes().size(), std::size_t(1));
        QCOMPARE(notes->notes().front().text, n.text);
        QVERIFY(w.hasUnsavedNotes());

        // Cancel at once: back to the job shown.
        const SessionPtr before = w.session();
        pick(other);
        auto* cancel = w.findChild<QPushButton*>("cancelButton");
        QVERIFY(cancel && cancel->isVisible());
        cancel->click();
        QVERIFY(cancelled.wait(60000));
        QCOMPARE(w.session(), before);
        QCOMPARE(w.viewState()->job(), shown);
        QVERIFY(!cancel->isVisible());

        // The flows gone: the other job's window cannot load; the one shown stays, and the message says so.
        for (const QString& f : QDir(dir.path()).entryList({"flows*"}, QDir::Files))
            QVERIFY(QFile::remove(dir.filePath(f)));
        pick(other);
        QVERIFY(failed.wait(60000));
        QCOMPARE(w.session(), before);
        QCOMPARE(w.viewState()->job(), shown);
        QVERIFY(jobs->selectionModel()->selectedRows().size() == 1 &&
                jobs->selectionModel()->selectedRows().first().data(JobTableModel::JobRole).toInt() == shown);
        auto* box = w.findChild<QMessageBox*>("errorDialog");
        QVERIFY(box);
        QCOMPARE(box->windowTitle(), QString("Could not load the window"));
        QVERIFY2(box->informativeText().contains("The window shown before is kept"),
                 qPrintable(box->informativeText()));
        box->close();
        QCOMPARE(notes->notes().size(), std::size_t(1));
        // (leaving the capture would ask to discard the note: a session file cannot hold a staged capture)
        notes->markSaved();
    }

    // loadNow (--screenshot) opens the same first window; a budget that holds the capture opens it whole.
    void theBudgetDecides() {
        SessionPtr s = CaptureLoader::loadNow(m_capture);
        QVERIFY(s->staged);
        checkWindow(*s);
        qputenv("LLMPRISM_MEMORY", "1G");
        s = CaptureLoader::loadNow(m_capture);
        QVERIFY(!s->staged);
        QVERIFY(!s->report().jobs.empty() && !s->analysis.jobs.at(0).timeline.ranks.empty());
        QVERIFY(s->recordsReleased); // analysed whole: the records are read again where they are needed
        qputenv("LLMPRISM_MEMORY", "lots");
        QVERIFY_THROWS_EXCEPTION(InputError, CaptureLoader::loadNow(m_capture));
        qputenv("LLMPRISM_MEMORY", "2M");
    }
};

QTEST_MAIN(TestGuiStaged)
#include "tst_gui_staged.moc"
