// The main window loads a capture in the background, shows its summary and problems, survives bad input.
#include "capture_loader.h"
#include "main_window.h"
#include "summary_view.h"

#include <QApplication>
#include <QFile>
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
