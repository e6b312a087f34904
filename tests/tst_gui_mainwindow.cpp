// The main window loads a capture in the background, shows its summary and problems, survives bad input.
#include "capture_loader.h"
#include "main_window.h"
#include "summary_view.h"
#include "timeline_view.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace prism::ui;

class TestMainWindow : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_capture;

private:
    // The banner above the timeline once `dir` is open (it must show), whether the capture had jobs; and that
    // it is gone once the fixture capture (topology, fine stamps) is open instead.
    void bannerOf(const QString& dir, QString* text, bool* jobs = nullptr, QString* imageTitle = nullptr) {
        MainWindow w;
        w.show();
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPath(dir);
        QVERIFY(done.wait(60000));
        auto* banner = w.findChild<QLabel*>("resolutionBanner");
        QVERIFY(banner);
        QVERIFY(banner->isVisible());
        *text = banner->text();
        if (jobs) *jobs = !w.session()->report().jobs.empty();
        if (imageTitle) *imageTitle = w.findChild<TimelineView*>()->exportTitle();
        w.openPath(m_capture);
        QVERIFY(done.wait(60000));
        QVERIFY(!banner->isVisible());
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("LLMPrismTest");
        QSettings().clear();
        QVERIFY(m_dir.isValid());
        m_capture = m_dir.filePath("tiny");
        QProcess sim;
        sim.start(LLMPRISM_CLI, {"simulate", "--preset", "tiny", "--seed", "3", "--out", m_capture});
        QVERIFY(sim.waitForFinished(120000));
        QCOMPARE(sim.exitCode(), 0);
    }

    void aCaptureLoadsInTheBackgroundAndShowsItsSummary() {
        MainWindow w;
        w.show();
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPath(m_capture);
        QVERIFY(done.wait(60000));
        QVERIFY(w.session());
        const auto& s = *w.session()->report().capture;
        QVERIFY(s.records > 0);
        QVERIFY(s.roceRecords > 0);
        QVERIFY(s.otherRecords > 0);
        // The summary shows the record count the engine counted, formatted with separators.
        QVERIFY(w.summaryView()->fieldText("Records").remove(',').toULongLong() == s.records);
        QVERIFY(w.summaryView()->fieldText("Hosts").startsWith(QString::number(s.hosts) + " hosts"));
        QVERIFY(w.windowTitle().contains("tiny"));
        QVERIFY(w.recentFiles().contains(QFileInfo(m_capture).absoluteFilePath()));
        QCOMPARE(w.summaryView()->jobTable()->rowCount(), int(w.session()->report().jobs.size()));
    }

    // Several files dropped or picked together (flow data split in two files of different folders, and the
    // topology) are one capture: every record of both, the topology's hosts; Reload opens them all again.
    void severalFilesOpenAsOneCapture() {
        const QString split = m_dir.filePath("split");
        QDir().mkpath(split);
        QFile in(m_capture + "/flows.csv");
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = in.readAll().split('\n');
        QFile a(split + "/part-a.csv"), b(split + "/part-b.txt"); // named anything: detected by content
        QVERIFY(a.open(QIODevice::WriteOnly) && b.open(QIODevice::WriteOnly));
        int rows = 0;
        for (int i = 0; i < lines.size(); ++i) {
            if (lines[i].isEmpty()) continue;
            if (lines[i].startsWith("start_ns")) {
                a.write(lines[i] + '\n');
                b.write(lines[i] + '\n');
                continue;
            }
            (rows++ % 2 ? b : a).write(lines[i] + '\n');
        }
        a.close();
        b.close();
        MainWindow w;
        w.show();
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPaths({split + "/part-a.csv", split + "/part-b.txt", m_capture + "/topology.json"});
        QVERIFY(done.wait(60000));
        QVERIFY(w.session());
        QCOMPARE(w.session()->sources.size(), 3);
        QCOMPARE(qulonglong(w.session()->report().capture->records), qulonglong(rows));
        QVERIFY(w.session()->capture.hasTopology);
        QVERIFY(!w.session()->report().jobs.empty());
    }

    // nfdump before 1.7.5 prints whole-second stamps: the same flows as an nfdump CSV (named .txt: detected by
    // content) open with a banner above the timeline saying so; the original capture has none.
    void wholeSecondStampsShowAResolutionBannerAboveTheTimeline() {
        QFile in(m_capture + "/flows.csv");
        QVERIFY(in.open(QIODevice::ReadOnly));
        QString out = "ts,te,td,sa,da,sp,dp,pr,ipkt,ibyt\n";
        const QStringList header = QString::fromUtf8(in.readLine()).trimmed().split(',');
        QCOMPARE(header.mid(0, 9).join(','), QString("start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets"));
        while (!in.atEnd()) {
            const QStringList f = QString::fromUtf8(in.readLine()).trimmed().split(',');
            if (f.size() < 9) continue;
            const qint64 start = f[0].toLongLong(), end = f[1].toLongLong();
            const QString ts = QDateTime::fromMSecsSinceEpoch(start / 1000000, Qt::UTC).toString("yyyy-MM-dd hh:mm:ss");
            const QString te = QDateTime::fromMSecsSinceEpoch(end / 1000000, Qt::UTC).toString("yyyy-MM-dd hh:mm:ss");
            out += QString("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10\n")
                       .arg(ts, te, QString::number(double(end - start) / 1e9, 'f', 3), f[2], f[3], f[4], f[5],
                            f[6] == "17" ? "UDP" : f[6], f[8])
                       .arg(f[7]);
        }
        const QString dir = m_dir.filePath("nfdump");
        QVERIFY(QDir().mkpath(dir));
        QFile csv(dir + "/export.txt");
        QVERIFY(csv.open(QIODevice::WriteOnly));
        csv.write(out.toUtf8());
        csv.close();
        QVERIFY(QFile::copy(m_capture + "/topology.json", dir + "/topology.json"));
        QString text;
        bool jobs = false;
        bannerOf(dir, &text, &jobs);
        QVERIFY2(text.contains("whole-second stamps"), qPrintable(text));
        QVERIFY(jobs); // the jobs are still there
    }

    // Flows without a topology: the banner above the timeline says so, what it leads to (every job split per
    // rail) and the fix, before any warning is opened, and an image's title says the hosts are unknown; a
    // capture with its topology has no banner.
    void aCaptureWithoutTopologySaysSoAboveTheTimeline() {
        const QString dir = m_dir.filePath("no-topology");
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(QFile::copy(m_capture + "/flows.csv", dir + "/flows.csv"));
        QString text, title;
        bannerOf(dir, &text, nullptr, &title);
        QVERIFY2(text.startsWith("No topology for the ") && text.contains("separate jobs"), qPrintable(text));
        QVERIFY2(title.contains("hosts unknown (no topology)"), qPrintable(title)); // every view's image says it
    }

    void aMissingCaptureShowsAnErrorAndTheWindowLives() {
        MainWindow w;
        w.show();
        QSignalSpy failed(w.loader(), &CaptureLoader::failed);
        w.openPath(m_dir.filePath("does-not-exist"));
        QVERIFY(failed.wait(30000));
        QVERIFY(w.lastError().contains("does-not-exist"));
        auto* box = w.findChild<QMessageBox*>("errorDialog");
        QVERIFY(box);
        QVERIFY(box->informativeText().contains("does-not-exist"));
        QVERIFY(!w.session());
        QVERIFY(w.isVisible());
    }

    void badRowsAreListedInTheProblemsPanel() {
        QString dir = m_dir.filePath("bad");
        QVERIFY(QDir().mkpath(dir));
        QFile::copy(m_capture + "/topology.json", dir + "/topology.json");
        QFile in(m_capture + "/flows.csv");
        QVERIFY(in.open(QIODevice::ReadOnly));
        QByteArray text = in.readAll();
        text.append("1,2,not-an-ip,10.0.0.1,1,4791,17,100,1\n");
        QFile out(dir + "/flows.csv");
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text);
        out.close();
        MainWindow w;
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        w.openPath(dir);
        QVERIFY(done.wait(60000));
        QCOMPARE(w.session()->report().capture->skippedRows, 1u);
        bool listed = false;
        for (int i = 0; i < w.problemsList()->count(); ++i)
            listed |= w.problemsList()->item(i)->text().contains("not-an-ip");
        QVERIFY(listed);
    }

    void aNewerLoadMakesTheOlderOneStale() {
        MainWindow w;
        QSignalSpy done(w.loader(), &CaptureLoader::finished);
        QSignalSpy failed(w.loader(), &CaptureLoader::failed);
        w.openPath(m_dir.filePath("does-not-exist"));
        w.openPath(m_capture);
        QVERIFY(done.wait(60000));
        QTest::qWait(200);
        QCOMPARE(failed.count(), 0); // the first load's failure was stale and dropped
        QCOMPARE(done.count(), 1);
        QVERIFY(w.session());
    }

    void cancellingALoadLeavesNoSession() {
        CaptureLoader loader;
        QSignalSpy cancelled(&loader, &CaptureLoader::cancelled);
        QSignalSpy done(&loader, &CaptureLoader::finished);
        loader.load(m_capture);
        loader.cancel();
        QTRY_VERIFY_WITH_TIMEOUT(cancelled.count() + done.count() == 1, 60000);
        // A load this small may finish before the cancel lands; either way exactly one outcome arrives.
        QVERIFY(!loader.isBusy());
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_gui_mainwindow.moc"
