// The session file (.prism) when things go wrong: interrupted and cancelled saves, a full disk and an unwritable
// folder change nothing, the source capture is never modified, and foreign, missing, newer and damaged files
// give a clear error naming the file, never a crash.
#include "store_test_util.h"
#include "test_util.h"
#include "io/report_json.h"
#include "store/notes.h"
#include "store/session.h"
#include "store/sha256.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sys/resource.h>
#include <unistd.h>

using namespace prism;
using namespace prism::test;

namespace {

namespace fs = std::filesystem;

// Every file in `dir` with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) out[e.path().filename().string()] = readBytes(e.path().string());
    return out;
}

void expectInputError(const std::function<void()>& f, const std::string& file, const std::vector<std::string>& words) {
    try {
        f();
    } catch (const InputError& e) {
        const std::string what = e.what();
        QVERIFY2(what.find(file) != std::string::npos, what.c_str());
        for (const std::string& w : words) QVERIFY2(what.find(w) != std::string::npos, (what + " lacks: " + w).c_str());
        return;
    } catch (const std::exception& e) {
        QFAIL((std::string("expected InputError, got: ") + e.what()).c_str());
    }
    QFAIL("expected InputError, nothing was thrown");
}

} // namespace

class TestStoreSafety : public QObject {
    Q_OBJECT
    SavedAnomalies m_saved;
    Fixture& m_anomalies = m_saved.anomalies;
    std::string& m_session = m_saved.session; // m_anomalies saved with sampleNotes

    std::string tmp(const std::string& name) const { return m_saved.tmp(name); }

private slots:
    void initTestCase() { m_saved.init(); }

    void anInterruptedSaveLeavesNoFileAndTheOldSessionUnchanged() {
        const std::string dir = tmp("interrupted");
        fs::create_directories(dir);
        const std::string path = dir + "/s.prism";
        SaveOptions stopHalfway;
        stopHalfway.recordsPerChunk = 1000; // many chunks, so progress comes often
        double seen = 0;
        stopHalfway.progress = [&](double f) {
            seen = f;
            return f < 0.5;
        };
        QVERIFY_EXCEPTION_THROWN(
            saveSession(path, m_anomalies.capture, m_anomalies.analysis, {}, stopHalfway), Cancelled);
        QVERIFY(seen >= 0.5);
        QVERIFY(snapshot(dir).empty()); // no session, no temp file

        saveSession(path, m_anomalies.capture, m_anomalies.analysis, {makeNote(NoteTarget::Range, "job-0", "v1")});
        const auto before = snapshot(dir);
        QCOMPARE(before.size(), std::size_t(1));
        // A callback that throws (a crash in the middle, as far as the file is concerned).
        SaveOptions crash;
        crash.progress = [](double f) -> bool {
            if (f > 0.3) throw std::runtime_error("simulated crash");
            return true;
        };
        QVERIFY_EXCEPTION_THROWN(saveSession(path, m_anomalies.capture, m_anomalies.analysis, {}, crash),
                                 std::runtime_error);
        QVERIFY(snapshot(dir) == before);
        QCOMPARE(readNotes(path).at(0).text, std::string("v1"));
        // Opening can be cancelled too, and reports progress up to the point it stopped.
        OpenOptions stopOpen;
        double last = 0;
        bool monotonic = true;
        stopOpen.progress = [&](double f) {
            monotonic = monotonic && f >= last;
            last = f;
            return f < 0.5;
        };
        QVERIFY_EXCEPTION_THROWN(openSession(path, stopOpen), Cancelled);
        QVERIFY(monotonic);
        QVERIFY(last >= 0.5 && last < 1.0);
        QVERIFY(snapshot(dir) == before);
    }

    void aFullDiskChangesNothing() {
        // A file size limit makes writes fail as a full disk does (EFBIG instead of ENOSPC), even for root.
        const std::string dir = tmp("full");
        fs::create_directories(dir);
        const std::string path = dir + "/s.prism";
        saveSession(path, m_anomalies.capture, m_anomalies.analysis, {makeNote(NoteTarget::Range, "job-0", "old")});
        const auto before = snapshot(dir);
        rlimit old{};
        QCOMPARE(::getrlimit(RLIMIT_FSIZE, &old), 0);
        auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = old;
        small.rlim_cur = 256 * 1024; // the session needs a few MB
        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &small), 0);
        std::string error;
        try {
            saveSession(path, m_anomalies.capture, m_anomalies.analysis, {});
        } catch (const std::runtime_error& e) {
            error = e.what();
        }
        ::setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, oldHandler);
        QVERIFY2(error.find(path) != std::string::npos, error.c_str());
        QVERIFY2(error.find("nothing changed") != std::string::npos, error.c_str());
        QVERIFY(snapshot(dir) == before);
        QCOMPARE(readNotes(path).at(0).text, std::string("old"));
    }

    void anUnwritableFolderChangesNothing() {
        const std::string dir = tmp("readonly");
        fs::create_directories(dir);
        fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
        const bool enforced = ::access(dir.c_str(), W_OK) != 0;
        std::string error;
        try {
            if (enforced) saveSession(dir + "/s.prism", m_anomalies.capture, m_anomalies.analysis, {});
        } catch (const std::runtime_error& e) {
            error = e.what();
        }
        fs::permissions(dir, fs::perms::owner_all);
        if (!enforced) QSKIP("running as root: folder permissions are not enforced");
        QVERIFY2(error.find(dir + "/s.prism") != std::string::npos, error.c_str());
        QVERIFY(snapshot(dir).empty());
    }

    // As root folder permissions are not enforced; a place no one may create files in still is (/proc).
    void aPlaceNoOneMayWriteChangesNothing() {
        const std::string path = "/proc/llmprism-test.prism";
        std::string error;
        try {
            saveSession(path, m_anomalies.capture, m_anomalies.analysis, {});
        } catch (const std::runtime_error& e) {
            error = e.what();
        }
        QVERIFY2(error.find(path) != std::string::npos, error.c_str());
        QVERIFY(!fs::exists(path));
    }

    // The process killed (SIGKILL) while it writes the session: the previous session stays whole and opens; the
    // hidden temp file the killed save left is removed by the next save.
    void aSaveKilledMidwayLeavesTheOldSession() {
        const std::string dir = tmp("killed");
        const std::string capture = dir + "/capture", out = dir + "/s.prism";
        sim::writeCapture(sim::simulate(*sim::makePreset("long-run", 1)), capture);
        auto import = [&](QProcess& p) {
            p.start(LLMPRISM_CLI, {"import", QString::fromStdString(capture), "--out", QString::fromStdString(out), "--quiet"});
        };
        {
            QProcess first;
            import(first);
            QVERIFY(first.waitForFinished(300000));
            QCOMPARE(first.exitCode(), 0);
        }
        const auto before = sha256File(out);
        bool killed = false;
        for (int attempt = 0; attempt < 5 && !killed; ++attempt) {
            QProcess p;
            import(p);
            QVERIFY(p.waitForStarted());
            while (p.state() == QProcess::Running && !killed) {
                for (const auto& e : fs::directory_iterator(dir))
                    if (e.path().filename().string().rfind(".s.prism.tmp-", 0) == 0 && fs::file_size(e.path()) > 0) {
                        p.kill(); // SIGKILL, in the middle of writing the temp file
                        killed = true;
                        break;
                    }
                QThread::usleep(500);
            }
            p.waitForFinished(60000);
        }
        if (!killed) QSKIP("the save finished before it could be caught writing");
        QCOMPARE(sha256File(out).sha256, before.sha256);
        const Session reopened = openSession(out);
        QVERIFY(!reopened.analysis.report.jobs.empty());
        auto leftovers = [&] {
            int n = 0;
            for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().rfind(".s.prism.tmp-", 0) == 0;
            return n;
        };
        QCOMPARE(leftovers(), 1);
        saveSession(out, reopened.capture, reopened.analysis, {});
        QCOMPARE(leftovers(), 0);
    }

    void theSourceCaptureIsNeverModified() {
        const std::string dir = tmp("source");
        Fixture f = makeFixture("tiny", dir, 2);
        const auto before = snapshot(dir);
        const auto flowsSum = sha256File(f.capture.flowsPath), topoSum = sha256File(f.capture.topologyPath);
        const auto mtime = fs::last_write_time(f.capture.flowsPath);
        saveSession(tmp("source.prism"), f.capture, f.analysis, {});
        openSession(tmp("source.prism"));
        // Saving over a source file is refused.
        expectInputError([&] { saveSession(f.capture.flowsPath, f.capture, f.analysis, {}); }, f.capture.flowsPath,
                         {"source file"});
        expectInputError([&] { saveSession(f.capture.topologyPath, f.capture, f.analysis, {}); },
                         f.capture.topologyPath, {"source file"});
        QVERIFY(snapshot(dir) == before);
        QCOMPARE(sha256File(f.capture.flowsPath).sha256, flowsSum.sha256);
        QCOMPARE(sha256File(f.capture.topologyPath).sha256, topoSum.sha256);
        QVERIFY(fs::last_write_time(f.capture.flowsPath) == mtime);
        QCOMPARE(readSessionMeta(tmp("source.prism")).flows.sha256, flowsSum.sha256);
    }

    void foreignFilesGiveAClearErrorAndStayUnchanged_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        QTest::newRow("text file") << "notes.prism" << QByteArray("start_ns,end_ns\n1,2\n") << "found a text file";
        QTest::newRow("JSON") << "report.prism" << QByteArray("{\"jobs\": []}") << "found a JSON text file";
        QTest::newRow("empty") << "empty.prism" << QByteArray() << "found an empty file";
        QTest::newRow("gzip") << "flows.csv.gz" << QByteArray("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8)
                              << "found a gzip file";
        QTest::newRow("binary") << "blob.prism" << QByteArray(200, '\x01') << "found binary data";
        QTest::newRow("other SQLite") << "other.db" << QByteArray() << "not an LLMPrism session";
        QTest::newRow("SQLite with a meta table") << "meta.db" << QByteArray() << "not an LLMPrism session";
    }
    void foreignFilesGiveAClearErrorAndStayUnchanged() {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        const std::string path = tmp("foreign-" + name.toStdString());
        if (name == "other.db")
            query(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", true);
        else if (name == "meta.db") // the same application id by accident, but not our meta
            query(path, "PRAGMA application_id = 1347572557; CREATE TABLE meta(key, value); "
                        "INSERT INTO meta VALUES ('format', 'something-else');", true);
        else
            writeBytes(path, content.toStdString());
        const std::string before = readBytes(path);
        QVERIFY(name == "meta.db" || !isSessionFile(path));
        expectInputError([&] { openSession(path); }, path, {expected.toStdString()});
        expectInputError([&] { readNotes(path); }, path, {expected.toStdString()});
        expectInputError([&] { addNote(path, makeNote(NoteTarget::Range, "job-0", "x")); }, path,
                         {expected.toStdString()});
        QCOMPARE(readBytes(path), before);
        QVERIFY(!fs::exists(path + "-journal"));
    }

    void missingFilesAndFoldersAreNamed() {
        expectInputError([&] { openSession(tmp("nothing-here.prism")); }, tmp("nothing-here.prism"), {"no such file"});
        expectInputError([&] { openSession(m_saved.dir.path().toStdString()); }, m_saved.dir.path().toStdString(),
                         {"is a folder", "expected an LLMPrism session file"});
    }

    void aNewerSchemaVersionIsRefusedAndLeftAlone() {
        for (const char* how : {"header", "meta"}) {
            const std::string path = tmp(std::string("newer-") + how + ".prism");
            fs::copy_file(m_session, path, fs::copy_options::overwrite_existing);
            if (std::string(how) == "header")
                query(path, "PRAGMA user_version = 2", true);
            else
                query(path, "UPDATE meta SET value = '2' WHERE key = 'schema_version'", true);
            const std::string before = readBytes(path);
            QVERIFY(isSessionFile(path)); // still ours, only newer
            expectInputError([&] { openSession(path); }, path,
                             {"schema version 2", "newer than this LLMPrism reads (1)"});
            expectInputError([&] { removeNote(path, 10); }, path, {"newer"});
            QCOMPARE(readBytes(path), before);
        }
    }

    void damagedSessionsGiveAClearErrorNeverACrash() {
        const std::string original = readBytes(m_session);
        auto damagedCopy = [&](const std::string& name, const std::function<void(std::string&)>& edit) {
            std::string bytes = original;
            edit(bytes);
            const std::string path = tmp("damaged-" + name + ".prism");
            writeBytes(path, bytes);
            return path;
        };
        // Truncated anywhere: inside the header, after the first page, halfway.
        for (std::size_t keep : {std::size_t(20), std::size_t(99), std::size_t(65536), original.size() / 2,
                                 original.size() - 1}) {
            const std::string path =
                damagedCopy("truncated-" + std::to_string(keep), [&](std::string& b) { b.resize(keep); });
            expectInputError([&] { openSession(path); }, path, {"damaged"});
        }
        // The schema page overwritten with garbage.
        {
            const std::string path = damagedCopy("schema", [](std::string& b) {
                std::mt19937 rng(1);
                for (std::size_t i = 100; i < 4000; ++i) b[i] = char(rng());
            });
            expectInputError([&] { openSession(path); }, path, {"damaged"});
        }
        // A flow blob and a timeline blob changed through SQL: the database is valid, the checksums catch it.
        for (const char* table : {"flow_chunks", "timeline_chunks", "job_records"}) {
            const std::string path = tmp(std::string("damaged-blob-") + table + ".prism");
            writeBytes(path, original);
            query(path, std::string("UPDATE ") + table + " SET data = substr(data, 1, 10) || x'00' || "
                        "substr(data, 12) WHERE rowid = (SELECT min(rowid) FROM " + table + ")", true);
            expectInputError([&] { openSession(path); }, path, {"damaged", "CRC-32C"});
        }
        // Tables that disagree with each other.
        const std::pair<const char*, const char*> edits[] = {
            {"records", "UPDATE meta SET value = '5' WHERE key = 'records'"},
            {"chunk gone", "DELETE FROM flow_chunks WHERE chunk = 0 AND column = 'bytes'"},
            {"report", "UPDATE report SET json = '{not json'"},
            {"report edited", "UPDATE report SET json = replace(json, '\"tp\":8', '\"tp\":4')"},
            {"endpoints", "DELETE FROM endpoints WHERE endpoint = 3"},
            {"timeline", "DELETE FROM timeline_ranks WHERE rank = 1"},
            {"notes", "UPDATE notes SET target = 'nowhere'"},
            {"no meta", "DELETE FROM meta WHERE key = 'format'"},
            {"table gone", "DROP TABLE timeline_ranks"},
            {"wrong type", "UPDATE meta SET value = 'many' WHERE key = 'endpoints'"}};
        for (const auto& [name, sql] : edits) {
            const std::string path = tmp(std::string("damaged-") + name + ".prism");
            writeBytes(path, original);
            try {
                query(path, sql, true);
            } catch (const std::exception&) {
                continue; // a CHECK constraint refused the edit: nothing to test
            }
            expectInputError([&] { openSession(path); }, path, {"damaged"});
        }
        // Random garbage anywhere: opening either fails with InputError or, when the bytes hit unused space,
        // gives the very same analysis. Never a crash, never another exception.
        std::mt19937_64 rng(7);
        int failures = 0;
        for (int trial = 0; trial < 24; ++trial) {
            const std::string path = damagedCopy("garbage", [&](std::string& b) {
                std::size_t at = 100 + rng() % (b.size() - 300);
                for (int i = 0; i < 64; ++i) b[at + std::size_t(i)] = char(rng());
            });
            try {
                Session s = openSession(path);
                QCOMPARE(reportToJson(s.analysis.report).dump(), reportToJson(m_anomalies.analysis.report).dump());
                QVERIFY(s.capture.flows.bytes == m_anomalies.capture.flows.bytes);
            } catch (const InputError& e) {
                ++failures;
                QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
            }
        }
        QVERIFY(failures > 0);
    }
};

QTEST_GUILESS_MAIN(TestStoreSafety)
#include "tst_store_safety.moc"
