// Session files in the desktop app: Save Session writes a .prism that reopens with the same jobs, steps,
// findings and timeline without re-analysis; notes on a step, a rank, a finding and a time range are listed,
// jump to their place and are saved; a foreign or damaged .prism gives a clear error and is left unchanged.
#include "capture_loader.h"
#include "io/report_json.h"
#include "main_window.h"
#include "notes_panel.h"
#include "store/notes.h"
#include "store/session.h"
#include "timeline_view.h"
#include "view_state.h"

#include <QApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <nlohmann/json.hpp>

using namespace prism;
using namespace prism::ui;

namespace {

QByteArray fileHash(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result();
}

bool openAndWait(MainWindow& w, const QString& path) {
    QSignalSpy done(w.loader(), &CaptureLoader::finished);
    w.openPath(path);
    return done.wait(180000) && w.session();
}

} // namespace

class TestGuiSession : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_capture;

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("LLMPrismTestSession");
        QSettings().clear();
        QVERIFY(m_dir.isValid());
        m_capture = m_dir.filePath("anomalies");
        QProcess sim;
        sim.start(LLMPRISM_CLI, {"simulate", "--preset", "anomalies", "--seed", "5", "--out", m_capture});
        QVERIFY(sim.waitForFinished(180000));
        QCOMPARE(sim.exitCode(), 0);
    }

    void notesAreSavedWithTheSessionAndReopenInTheirPlaces() {
        const QByteArray flowsBefore = fileHash(m_capture + "/flows.csv");
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, m_capture));
        ViewState* state = w.viewState();
        NotesPanel* notes = w.notesPanel();
        QVERIFY(state->jobData());
        QVERIFY(!w.hasUnsavedNotes());
        // Find a job with findings, so that every kind of note has a target.
        int job = -1;
        for (int j = 0; j < int(w.session()->report().jobs.size()); ++j)
            if (!w.session()->report().jobs[std::size_t(j)].findings.empty()) job = j;
        QVERIFY(job >= 0);
        state->setJob(job);
        const JobInfo& info = w.session()->report().jobs[std::size_t(job)];
        QVERIFY(info.steps.size() > 4);

        Note n;
        state->select(Selection::ofStep(3), true);
        QVERIFY(notes->noteForSelection(&n));
        QCOMPARE(n.target, NoteTarget::Step);
        n.text = "step three looks long";
        const auto stepNote = notes->addNote(n);
        QVERIFY(stepNote > 0);

        state->select(Selection::ofRank(2), true);
        QVERIFY(notes->noteForSelection(&n));
        QCOMPARE(n.target, NoteTarget::Rank);
        QCOMPARE(n.ip, state->jobData()->timeline().ranks[2].ip);
        n.text = "rank 2 on the suspicious host";
        const auto rankNote = notes->addNote(n);
        QVERIFY(rankNote > 0);

        state->select(Selection::ofFinding(0), true);
        QVERIFY(notes->noteForSelection(&n));
        QCOMPARE(n.target, NoteTarget::Finding);
        n.text = "ticket 4711: confirmed";
        const auto findingNote = notes->addNote(n);
        QVERIFY(findingNote > 0);

        state->clearSelection();
        const std::int64_t r0 = info.steps[1].startNs, r1 = info.steps[2].endNs;
        w.timeline()->setRange(r0, r1);
        QVERIFY(notes->noteForSelection(&n));
        QCOMPARE(n.target, NoteTarget::Range);
        n.text = "two steps around the slowdown";
        const auto rangeNote = notes->addNote(n);
        QVERIFY(rangeNote > 0);

        // A note that points nowhere is refused with the reason.
        Note bad = n;
        bad.target = NoteTarget::Step;
        bad.step = int(info.steps.size()) + 5;
        QString why;
        QCOMPARE(notes->addNote(bad, &why), 0);
        QVERIFY(why.contains("does not exist"));

        QCOMPARE(notes->list()->topLevelItemCount(), 4);
        QCOMPARE(int(w.timeline()->noteMarks().size()), 4); // flags on the timeline's step lane
        QVERIFY(w.hasUnsavedNotes());
        QVERIFY(w.isWindowModified());

        const QString prism = m_dir.filePath("anomalies.prism");
        QString error;
        QVERIFY2(w.saveSessionAs(prism, &error), qPrintable(error));
        QVERIFY(!w.hasUnsavedNotes());
        QVERIFY(!w.isWindowModified());
        QCOMPARE(w.sessionPath(), QFileInfo(prism).absoluteFilePath());
        QVERIFY(isSessionFile(prism.toStdString()));
        QCOMPARE(fileHash(m_capture + "/flows.csv"), flowsBefore); // the source is only read

        // Reopen in a new window: the same report, field by field (as JSON), and the same timelines.
        MainWindow w2;
        w2.resize(1400, 900);
        w2.show();
        QVERIFY(openAndWait(w2, prism));
        QCOMPARE(w2.sessionPath(), QFileInfo(prism).absoluteFilePath());
        QCOMPARE(QString::fromStdString(reportToJson(w2.session()->report()).dump(1)),
                 QString::fromStdString(reportToJson(w.session()->report()).dump(1)));
        QCOMPARE(w2.session()->analysis.jobs.size(), w.session()->analysis.jobs.size());
        for (std::size_t j = 0; j < w.session()->analysis.jobs.size(); ++j)
            QCOMPARE(w2.session()->analysis.jobs[j].timeline.segmentCount(),
                     w.session()->analysis.jobs[j].timeline.segmentCount());
        QCOMPARE(w2.jobList()->model()->rowCount(), w.jobList()->model()->rowCount());
        QVERIFY(w2.timeline()->grab().toImage().size().width() > 0);
        QVERIFY(w2.timeline()->paintCount() > 0 || QTest::qWaitFor([&] { return w2.timeline()->paintCount() > 0; }));

        // The notes came back, and each jumps to its place.
        NotesPanel* notes2 = w2.notesPanel();
        QCOMPARE(int(notes2->notes().size()), 4);
        QCOMPARE(notes2->list()->topLevelItemCount(), 4);
        QVERIFY(!w2.hasUnsavedNotes());
        w2.viewState()->setJob(job == 0 ? 1 % int(w2.session()->report().jobs.size()) : 0);

        QVERIFY(notes2->jumpTo(stepNote));
        QCOMPARE(w2.viewState()->job(), job);
        QCOMPARE(w2.viewState()->selection().kind, Selection::Kind::Step);
        QCOMPARE(w2.viewState()->selection().step, 3);
        QVERIFY(w2.timeline()->rangeStart() <= info.steps[3].startNs);
        QVERIFY(w2.timeline()->rangeEnd() >= info.steps[3].endNs);

        QVERIFY(notes2->jumpTo(rankNote));
        QCOMPARE(w2.viewState()->selection().kind, Selection::Kind::Rank);
        QCOMPARE(w2.viewState()->selection().rank, 2);

        QVERIFY(notes2->jumpTo(findingNote));
        QCOMPARE(w2.viewState()->selection().kind, Selection::Kind::Finding);
        QCOMPARE(w2.viewState()->selection().finding, 0);

        QVERIFY(notes2->jumpTo(rangeNote));
        QCOMPARE(w2.timeline()->rangeStart(), r0);
        QCOMPARE(w2.timeline()->rangeEnd(), r1);

        // Clicking the range note's flag on the step lane jumps to the range (a click on the lane elsewhere
        // would select the step under it instead).
        w2.timeline()->fitAll();
        w2.viewState()->clearSelection();
        QCOMPARE(int(w2.timeline()->noteMarks().size()), 4);
        const QPoint flag(int(w2.timeline()->xOfTime(r0)) + 2, w2.timeline()->stepLaneRect().center().y());
        QVERIFY(w2.timeline()->noteMarkAt(flag) >= 0);
        QVERIFY(w2.timeline()->describeAt(flag).contains("two steps around the slowdown"));
        QTest::mouseClick(w2.timeline(), Qt::LeftButton, {}, flag);
        QCOMPARE(w2.timeline()->rangeStart(), r0);
        QCOMPARE(w2.timeline()->rangeEnd(), r1);
        QVERIFY(w2.viewState()->selection().kind != Selection::Kind::Step);

        // Activating a list entry jumps too.
        w2.viewState()->clearSelection();
        QTreeWidgetItem* first = notes2->list()->topLevelItem(0);
        emit notes2->list()->itemActivated(first, 0);
        QCOMPARE(w2.viewState()->selection().kind, Selection::Kind::Step);

        // Editing the notes of an opened session and saving writes the notes only, in place.
        QVERIFY(notes2->setText(rankNote, "rank 2: replaced the cable"));
        QVERIFY(notes2->removeNote(rangeNote));
        QVERIFY(w2.hasUnsavedNotes());
        const SessionMeta metaBefore = readSessionMeta(prism.toStdString());
        w2.saveSessionInteractive(false);
        QVERIFY(!w2.hasUnsavedNotes());
        const std::vector<Note> stored = readNotes(prism.toStdString());
        QCOMPARE(int(stored.size()), 3);
        bool edited = false;
        for (const Note& s : stored) edited |= s.id == rankNote && s.text == "rank 2: replaced the cable";
        QVERIFY(edited);
        QCOMPARE(readSessionMeta(prism.toStdString()).records, metaBefore.records);
        QCOMPARE(readSessionMeta(prism.toStdString()).created, metaBefore.created);

        // Save As from an opened session keeps the source checksums it recorded.
        const QString copy = m_dir.filePath("copy.prism");
        QVERIFY2(w2.saveSessionAs(copy, &error), qPrintable(error));
        QCOMPARE(readSessionMeta(copy.toStdString()).flows.sha256, metaBefore.flows.sha256);
        QCOMPARE(int(readNotes(copy.toStdString()).size()), 3);
    }

    // Sessions and captures alike hold their timelines packed (docs/ENGINE.md "Segments in memory").
    static bool packed(const AnalysisSession& s) {
        std::size_t n = 0;
        for (const JobAnalysis& j : s.analysis.jobs)
            for (const RankTimeline& r : j.timeline.ranks) {
                if (!r.segments.empty()) return false;
                n += r.packed.size();
            }
        return n > 0;
    }

    void anotherJobOfAnOpenedSessionIsIndexedWhenShown() {
        const QString prism = m_dir.filePath("jobs.prism");
        {
            MainWindow w;
            QVERIFY(openAndWait(w, m_capture));
            QVERIFY(packed(*w.session()));
            QString error;
            QVERIFY2(w.saveSessionAs(prism, &error), qPrintable(error));
        }
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QVERIFY(openAndWait(w, prism));
        QVERIFY(packed(*w.session()));
        const auto& lod = w.session()->lod;
        QVERIFY(!lod.empty() && lod[0]); // the job shown first is indexed by the loader
        if (lod.size() < 2) QSKIP("the capture has one job");
        QVERIFY(!lod[1]);
        w.viewState()->setJob(1);
        QVERIFY(lod[1]); // built when shown, and kept
        QVERIFY(!w.timeline()->grab().toImage().isNull());
    }

    // A capture analysed whole is held without the columns only the analysis read; Save Session reads the files
    // again: the session is the one `llmprism-cli import` writes of them. Files changed since they were opened are
    // refused by name, and nothing is written.
    void aCaptureIsSavedFromItsFilesReadAgain() {
        const QString cap = m_dir.filePath("again");
        QVERIFY(QDir().mkpath(cap));
        for (const QString f : {"flows.csv", "topology.json"}) QVERIFY(QFile::copy(m_capture + "/" + f, cap + "/" + f));
        MainWindow w;
        QVERIFY(openAndWait(w, cap));
        QVERIFY(w.session()->recordsReleased); // the views hold the analysis, not the records
        QCOMPARE(w.session()->capture.flows.size(), std::size_t(0));
        QVERIFY(w.session()->capture.flows.endpoints.size() > 0);
        const QString saved = m_dir.filePath("again.prism"), imported = m_dir.filePath("again-cli.prism");
        QString error;
        QVERIFY2(w.saveSessionAs(saved, &error), qPrintable(error));
        QProcess imp;
        imp.start(LLMPRISM_CLI, {"import", cap, "--out", imported, "--quiet"});
        QVERIFY(imp.waitForFinished(180000));
        QCOMPARE(imp.exitCode(), 0);
        const Session a = openSession(saved.toStdString()), b = openSession(imported.toStdString());
        QCOMPARE(reportToJson(a.analysis.report).dump(), reportToJson(b.analysis.report).dump());
        const FlowTable &x = a.capture.flows, &y = b.capture.flows;
        QCOMPARE(x.size(), y.size());
        QVERIFY(x.startNs == y.startNs && x.durationNs == y.durationNs && x.src == y.src && x.dst == y.dst);
        QVERIFY(x.srcPort == y.srcPort && x.dstPort == y.dstPort && x.proto == y.proto);
        for (std::size_t i = 0; i < x.size(); ++i)
            if (x.bytes[i] != y.bytes[i] || x.packets[i] != y.packets[i]) QFAIL("bytes or packets differ");
        QCOMPARE(a.capture.source, b.capture.source);
        QCOMPARE(a.meta.flows.sha256, b.meta.flows.sha256);
        for (std::size_t j = 0; j < a.analysis.jobs.size(); ++j)
            QCOMPARE(a.analysis.recognition.jobs[j].records, b.analysis.recognition.jobs[j].records);

        // The capture changes: a RoCE record's source port (counts, bytes and times stay), a host's name, one more
        // record. Each is refused by name, and nothing is written.
        auto readAll = [](const QString& file) {
            QFile f(file);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        auto writeAll = [](const QString& file, const QByteArray& bytes) {
            QFile f(file);
            return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
        };
        const QByteArray flows = readAll(cap + "/flows.csv"), topology = readAll(cap + "/topology.json");
        QList<QByteArray> lines = flows.split('\n');
        int roce = -1;
        for (int i = 1; i < lines.size() && roce < 0; ++i)
            if (lines[i].split(',').value(5) == "4791") roce = i;
        QVERIFY(roce > 0);
        QList<QByteArray> fields = lines[roce].split(',');
        fields[4] = QByteArray::number(fields[4].toInt() == 1 ? 2 : 1);
        lines[roce] = fields.join(',');
        QByteArray topologyRenamed = topology;
        topologyRenamed.replace("\"node-0001\"", "\"node-0001-renamed\"");
        QVERIFY(topologyRenamed != topology);
        const QString refused = m_dir.filePath("changed.prism");
        for (int change = 0; change < 3; ++change) {
            QVERIFY(writeAll(cap + "/flows.csv", change == 0   ? lines.join('\n')
                                                 : change == 2 ? flows + lines.at(1) + "\n"
                                                               : flows));
            QVERIFY(writeAll(cap + "/topology.json", change == 1 ? topologyRenamed : topology));
            QVERIFY(!w.saveSessionAs(refused, &error));
            QVERIFY2(error.contains("changed since it was opened") && error.contains("flows.csv"), qPrintable(error));
            QVERIFY(!QFile::exists(refused));
        }
        // Back as it was: saved again.
        QVERIFY(writeAll(cap + "/flows.csv", flows) && writeAll(cap + "/topology.json", topology));
        QVERIFY2(w.saveSessionAs(refused, &error), qPrintable(error));
    }

    void aForeignOrDamagedSessionShowsAClearErrorAndIsLeftAlone() {
        // Not a database at all, named .prism.
        const QString foreign = m_dir.filePath("foreign.prism");
        {
            QFile f(foreign);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is not a session\n");
        }
        // A real session cut in half.
        const QString cut = m_dir.filePath("cut.prism");
        {
            const QString whole = m_dir.filePath("whole.prism");
            MainWindow w;
            QVERIFY(openAndWait(w, m_capture));
            QVERIFY(w.saveSessionAs(whole));
            QFile in(whole);
            QVERIFY(in.open(QIODevice::ReadOnly));
            QByteArray bytes = in.readAll();
            QFile out(cut);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(bytes.left(bytes.size() / 2));
        }
        for (const QString& path : {foreign, cut}) {
            const QByteArray before = fileHash(path);
            MainWindow w;
            w.show();
            QSignalSpy failed(w.loader(), &CaptureLoader::failed);
            w.openPath(path);
            QVERIFY(failed.wait(60000));
            QVERIFY2(w.lastError().contains(QFileInfo(path).fileName()), qPrintable(w.lastError()));
            QVERIFY(!w.session());
            QVERIFY(w.isVisible());
            QVERIFY(w.findChild<QMessageBox*>("errorDialog"));
            QCOMPARE(fileHash(path), before);
        }
    }
};

QTEST_MAIN(TestGuiSession)
#include "tst_gui_session.moc"
