// ClickHouse (io/clickhouse.h): URLs, and against a real server started here (Debian's clickhouse-server on a
// loopback port, in a temporary folder, stopped at the end and by `timeout` at the latest): export, the
// whole-window read, the staged analysis giving the report the files give, errors that name what is wrong.
// Skipped, with a message, where no server can be started.
#include "analysis/staged.h"
#include "io/clickhouse.h"
#include "io/report_json.h"
#include "clickhouse_server.h"
#include "test_util.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <unistd.h>

using namespace prism;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

} // namespace

class TestClickHouse : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    test::ClickHouseServer m_server;

    std::string url(const std::string& table) const { return m_server.url(table); }
    std::string path(const std::string& name) const { return (m_dir.path() + "/" + name.c_str()).toStdString(); }

    // Exports `capture` into a table of its own; returns the table's URL.
    std::string exported(const Capture& capture, const std::string& table) {
        const std::string u = url("llmprism_test." + table);
        exportToClickHouse(capture.flows, ClickHouseUrl::parse(u), false);
        return u;
    }

    void compareWithFiles(const Capture& capture, const std::string& table) {
        const std::string u = exported(capture, table);
        const std::string expected = test::reportText(analyzeCapture(capture));
        // Staged: the server's aggregates, then one job at a time.
        ClickHouseStore store(ClickHouseUrl::parse(u));
        StagedStats stats;
        const Report staged = analyzeStore(store, capture.topology, capture.hasTopology, {}, &stats);
        QCOMPARE(staged.capture->source, ClickHouseUrl::parse(u).display());
        std::string got = test::reportText(staged);
        QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
        QVERIFY(stats.groupedRows > 0);
        // The whole table read back: the same records, so the same report.
        LoadDiagnostics diag;
        Capture back = capture;
        back.flows = readClickHouseTable(ClickHouseUrl::parse(u), {}, diag);
        QVERIFY(diag.clean());
        QCOMPARE(back.flows.size(), capture.flows.size());
        QCOMPARE(back.flows.hasCongestion(), capture.flows.hasCongestion());
        got = test::reportText(analyzeCapture(back));
        QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        if (!m_server.start(m_dir.path())) qWarning("%s", qPrintable(m_server.skip));
    }

    void cleanupTestCase() { m_server.stop(); }

    void urlsAreReadAsDocumented_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("display");
        QTest::newRow("default port") << "clickhouse://db.example/flows.all" << "clickhouse://db.example:8123/flows.all";
        QTest::newRow("port") << "clickhouse://10.1.2.3:9123/net.flows" << "clickhouse://10.1.2.3:9123/net.flows";
        QTest::newRow("user and password") << "clickhouse://ops:s3cret@h:8123/a.b" << "clickhouse://ops@h:8123/a.b";
        QTest::newRow("ipv6") << "clickhouse://[::1]:8124/a_1.b_2" << "clickhouse://[::1]:8124/a_1.b_2";
    }
    void urlsAreReadAsDocumented() {
        QFETCH(QString, text);
        QFETCH(QString, display);
        const ClickHouseUrl u = ClickHouseUrl::parse(text.toStdString());
        QCOMPARE(QString::fromStdString(u.display()), display);
        QVERIFY(!contains(u.display(), "s3cret"));
    }

    void badUrlsSayWhatIsExpected_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("no table") << "clickhouse://h:8123/flows" << "no table: the path must be DATABASE.TABLE";
        QTest::newRow("no path") << "clickhouse://h:8123" << "no /DATABASE.TABLE";
        QTest::newRow("bad port") << "clickhouse://h:http/a.b" << "port \"http\" is not a number from 1 to 65535";
        QTest::newRow("port zero") << "clickhouse://h:0/a.b" << "port \"0\" is not a number from 1 to 65535";
        QTest::newRow("no host") << "clickhouse://:8123/a.b" << "no host";
        QTest::newRow("quote in name") << "clickhouse://h/a.b';DROP" << "must be letters, digits and _";
        QTest::newRow("open bracket") << "clickhouse://[::1/a.b" << "an IPv6 host without its closing ]";
        QTest::newRow("time beyond 64-bit ns") << "clickhouse://h/a.b?from=2262-04-11T23:47:15-23:59"
                                               << "from= expects nanoseconds since the epoch";
        QTest::newRow("year 1") << "clickhouse://h/a.b?to=0001-01-01T00:00:00Z"
                                << "to= expects nanoseconds";
    }
    void badUrlsSayWhatIsExpected() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        try {
            ClickHouseUrl::parse(text.toStdString());
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, message.toStdString()), e.what());
            QVERIFY2(contains(e.issue().message, "expected clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE.TABLE"),
                     e.what());
        }
    }

    // A window's times may carry their zone (RFC 3339), as pmacct writes them.
    void zonedTimesInUrls() {
        const ClickHouseUrl u =
            ClickHouseUrl::parse("clickhouse://h/a.b?from=2024-01-02T04:04:05.5+01:00&to=2024-01-02T03:04:06Z");
        QCOMPARE(u.window.from, 1704164645LL * 1000000000 + 500000000);
        QCOMPARE(u.window.to, 1704164646LL * 1000000000);
    }

    void aPasswordNeverAppearsInMessages() {
        try {
            ClickHouseUrl::parse("clickhouse://ops:s3cret@h:8123/flows");
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(!contains(e.what(), "s3cret"), e.what());
        }
    }

    void aServerNotThereIsNamed() {
        // Port 1 on loopback: nothing listens there.
        try {
            LoadDiagnostics diag;
            readClickHouseTable(ClickHouseUrl::parse("clickhouse://127.0.0.1:1/a.b"), {}, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, std::string("clickhouse://127.0.0.1:1/a.b"));
            QVERIFY2(contains(e.issue().message, "cannot reach the server at 127.0.0.1:1"), e.what());
        }
    }

    void presetsAnalyseAsTheirFiles_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        QTest::addColumn<double>("loss");
        QTest::newRow("two-jobs") << "two-jobs" << 3 << 0.0;
        QTest::newRow("restart") << "restart" << 7 << 0.0;
        QTest::newRow("shared-nics lossy") << "shared-nics" << 5 << 0.01;
        QTest::newRow("megatron-8") << "megatron-8" << 2 << 0.0;
        QTest::newRow("moe") << "moe" << 1 << 0.0;
    }
    void presetsAnalyseAsTheirFiles() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        QFETCH(QString, preset);
        QFETCH(int, seed);
        QFETCH(double, loss);
        sim::SimConfig config = test::presetConfig(preset.toStdString().c_str(), seed);
        config.lossRate = loss;
        const std::string dir = path("preset-" + preset.toStdString());
        sim::writeCapture(sim::simulate(config), dir);
        std::string table = preset.toStdString();
        std::replace(table.begin(), table.end(), '-', '_');
        compareWithFiles(loadCapture(dir), table);
    }

    // A packet capture's congestion counts go through the table (NULL where a source has none).
    void congestionCountsSurviveTheTable() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        sim::SimConfig c = test::presetConfig("tiny", 2);
        for (sim::JobSpec& j : c.jobs) {
            j.steps = 3;
            j.activationBytes /= 64;
            j.gradientBytes /= 64;
        }
        const std::string dir = path("pcap");
        sim::writePcapCapture(sim::simulate(c), dir);
        const Capture capture = loadCapture(dir);
        QVERIFY(capture.flows.hasCongestion());
        compareWithFiles(capture, "pcap");
    }

    void aWindowKeepsTheRecordsStartingInIt() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        const Capture capture = test::captureOf(test::simulatePreset("tiny", 4));
        const std::string u = exported(capture, "window");
        const std::int64_t from = capture.flows.startNs[capture.flows.size() / 4];
        const std::int64_t to = capture.flows.startNs[capture.flows.size() / 2];
        std::size_t expected = 0;
        for (std::int64_t s : capture.flows.startNs) expected += s >= from && s < to;
        LoadDiagnostics diag;
        const FlowTable got = readClickHouseTable(ClickHouseUrl::parse(u), {from, to}, diag);
        QCOMPARE(got.size(), expected);
        ClickHouseStore store(ClickHouseUrl::parse(u), {from, to});
        QCOMPARE(store.overview().records, std::uint64_t(expected));
        // The CLI's --from / --to take the same window.
        QProcess p;
        p.start(LLMPRISM_CLI, {"analyze", QString::fromStdString(u), "--from", QString::number(from), "--to",
                               QString::number(to), "--json", QString::fromStdString(path("window.json")), "--quiet"});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        const auto j = nlohmann::json::parse(test::readBytes(path("window.json")));
        QCOMPARE(j["capture"]["records"].get<std::size_t>(), expected);
    }

    void aTableWithRecordsIsRefusedUnlessAppending() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        const Capture capture = test::captureOf(test::simulatePreset("tiny", 5));
        const std::string u = exported(capture, "append");
        try {
            exportToClickHouse(capture.flows, ClickHouseUrl::parse(u), false);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "the table already holds") &&
                         contains(e.issue().message, "--append adds to them"),
                     e.what());
        }
        exportToClickHouse(capture.flows, ClickHouseUrl::parse(u), true);
        ClickHouseStore store(ClickHouseUrl::parse(u));
        QCOMPARE(store.overview().records, std::uint64_t(2 * capture.flows.size()));
        // Cancel (the GUI's) stops a query: Cancelled, not an answer; the store answers again once it is lifted.
        bool cancel = true;
        store.setInterrupt([&] { return cancel; });
        QVERIFY_THROWS_EXCEPTION(Cancelled, store.groupedRoce(0, 1'000'000));
        cancel = false;
        QCOMPARE(store.overview().records, std::uint64_t(2 * capture.flows.size()));
    }

    void missingTablesAndColumnsAreNamed() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        try {
            ClickHouseStore store(ClickHouseUrl::parse(url("llmprism_test.nothing_here")));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "no table llmprism_test.nothing_here on the server"), e.what());
        }
        ClickHouseClient client(ClickHouseUrl::parse(url("llmprism_test.partial")));
        client.query("CREATE DATABASE IF NOT EXISTS llmprism_test");
        client.query("CREATE TABLE IF NOT EXISTS llmprism_test.partial (start_ns Int64, src String, dst String) "
                     "ENGINE = MergeTree() ORDER BY start_ns");
        try {
            ClickHouseStore store(ClickHouseUrl::parse(url("llmprism_test.partial")));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "the table has no column end_ns, src_port, dst_port, proto, bytes"),
                     e.what());
        }
        // A query the server refuses: its own message comes back.
        try {
            client.query("SELECT no_such_column FROM llmprism_test.partial");
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "the server answered HTTP") &&
                         contains(e.issue().message, "no_such_column"),
                     e.what());
        }
    }

    // The table's columns are flows.csv's (src_ip, dst_ip: a pipeline that loads flows.csv's columns fits); a table
    // that names its addresses src, dst (what LLMPrism 0.1 created) is still read and appended to.
    void tablesOfEitherNamingAreRead() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        ClickHouseClient client(ClickHouseUrl::parse(url("llmprism_test.x")));
        client.query("CREATE DATABASE IF NOT EXISTS llmprism_test");
        QVERIFY(
            contains(clickHouseSchema(ClickHouseUrl::parse(url("llmprism_test.x"))), "src_ip String, dst_ip String"));
        const Capture capture = test::captureOf(test::simulatePreset("tiny", 8));
        const std::string expected = test::reportText(analyzeCapture(capture));
        for (const char* names : {"src_ip String, dst_ip String", "src String, dst String"}) {
            const std::string table = std::string("llmprism_test.naming_") + (names[3] == '_' ? "csv" : "old");
            client.query("CREATE TABLE " + table + " (start_ns Int64, end_ns Int64, " + names +
                         ", src_port UInt16, dst_port UInt16, proto UInt8, bytes UInt64, packets UInt64, retransmits "
                         "Nullable(UInt32), cnps Nullable(UInt32), ecn_ce Nullable(UInt32)) ENGINE = MergeTree() "
                         "ORDER BY start_ns");
            const ClickHouseUrl u = ClickHouseUrl::parse(url(table));
            QCOMPARE(exportToClickHouse(capture.flows, u, false), std::uint64_t(capture.flows.size()));
            ClickHouseStore store(u);
            QCOMPARE(store.overview().records, std::uint64_t(capture.flows.size()));
            const std::string got = test::reportText(analyzeStore(store, capture.topology, capture.hasTopology, {}));
            QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
            LoadDiagnostics diag;
            QCOMPARE(readClickHouseTable(u, {}, diag).size(), capture.flows.size());
        }
    }

    void unreadableRowsAreSkippedWithTheirRow() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        const std::string u = url("llmprism_test.rows");
        ClickHouseClient client(ClickHouseUrl::parse(u));
        client.query("CREATE DATABASE IF NOT EXISTS llmprism_test");
        client.query(clickHouseSchema(ClickHouseUrl::parse(u)));
        client.insert("INSERT INTO llmprism_test.rows FORMAT TabSeparated",
                      "1\t2\t10.0.0.1\t10.0.0.2\t5\t4791\t17\t100\t1\t\\N\t\\N\t\\N\n"
                      "3\t4\tnot-an-ip\t10.0.0.2\t5\t4791\t17\t100\t1\t\\N\t\\N\t\\N\n"
                      "5\t9\t10.0.0.2\t10.0.0.1\t5\t4791\t17\t100\t1\t\\N\t\\N\t\\N\n");
        LoadDiagnostics diag;
        const FlowTable t = readClickHouseTable(ClickHouseUrl::parse(u), {}, diag);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(diag.skippedRows, std::uint64_t(1));
        QCOMPARE(diag.errors.at(0).file, ClickHouseUrl::parse(u).display());
        QCOMPARE(diag.errors.at(0).line, std::uint64_t(2));
        QVERIFY2(contains(diag.errors.at(0).message, "src \"not-an-ip\""), diag.errors.at(0).message.c_str());
    }

    // What the GUI's Open Database… and `import` do: the table's URL and a topology as the sources of a capture.
    void aTableIsACaptureSource() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        const std::string dir = path("source");
        sim::writeCapture(test::simulatePreset("tiny", 6), dir);
        const Capture files = loadCapture(dir);
        const std::string u = exported(files, "source");
        const Capture table = loadCapture(std::vector<std::string>{u, dir + "/topology.json"});
        QVERIFY(table.hasTopology);
        QCOMPARE(table.flowsKinds.at(0).substr(0, 16), std::string("ClickHouse table"));
        const std::string a = test::reportText(analyzeCapture(table)), b = test::reportText(analyzeCapture(files));
        QVERIFY2(a == b, test::firstDifference(a, b).c_str());
        // A window in the URL, as the dialog writes it.
        const std::int64_t mid = files.flows.startNs[files.flows.size() / 2];
        const Capture half = loadCapture(std::vector<std::string>{u + "?from=" + std::to_string(mid)});
        std::size_t expected = 0;
        for (std::int64_t s : files.flows.startNs) expected += s >= mid;
        QCOMPARE(half.flows.size(), expected);
    }

    // The CLI end to end: export-clickhouse, then analyze the table: the report of the folder.
    void theCliExportsAndAnalysesATable() {
        if (!m_server.running()) QSKIP(qPrintable(m_server.skip));
        const std::string dir = path("cli");
        sim::writeCapture(test::simulatePreset("pp-anomalies", 2), dir);
        const QString u = QString::fromStdString(url("llmprism_test.cli"));
        auto run = [](const QStringList& args) {
            QProcess p;
            p.start(LLMPRISM_CLI, args);
            p.waitForFinished(300000);
            return std::pair{p.exitCode(), QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError())};
        };
        auto [code, out] = run({"export-clickhouse", QString::fromStdString(dir), "--url", u});
        QVERIFY2(code == 0 && out.contains("flow records to"), qPrintable(out));
        // A session is taken as its capture: the same records into another table.
        const QString prism = QString::fromStdString(path("cli.prism"));
        std::tie(code, out) = run({"import", QString::fromStdString(dir), "--out", prism, "--quiet"});
        QCOMPARE(code, 0);
        const QString fromSession = QString::fromStdString(url("llmprism_test.cli_session"));
        std::tie(code, out) = run({"export-clickhouse", prism, "--url", fromSession});
        QVERIFY2(code == 0 && out.contains("flow records to"), qPrintable(out));
        QCOMPARE(ClickHouseStore(ClickHouseUrl::parse(fromSession.toStdString())).overview().records,
                 ClickHouseStore(ClickHouseUrl::parse(u.toStdString())).overview().records);
        std::tie(code, out) = run({"analyze", u, "--topology", QString::fromStdString(dir + "/topology.json"), "--json",
                                   QString::fromStdString(path("cli-table.json"))});
        QVERIFY2(code == 0 && out.contains("recognition on"), qPrintable(out));
        std::tie(code, out) = run({"analyze", QString::fromStdString(dir), "--quiet", "--json",
                                   QString::fromStdString(path("cli-files.json"))});
        QCOMPARE(code, 0);
        auto a = nlohmann::json::parse(test::readBytes(path("cli-table.json")));
        auto b = nlohmann::json::parse(test::readBytes(path("cli-files.json")));
        a["capture"].erase("source");
        b["capture"].erase("source");
        QVERIFY2(a == b, test::firstDifference(a.dump(1), b.dump(1)).c_str());
        // --memory applies to a table too: a job over the budget is analysed window by window (said in its notes),
        // with the shape and as many steps as the whole analysis.
        std::tie(code, out) = run({"analyze", u, "--topology", QString::fromStdString(dir + "/topology.json"),
                                   "--memory", "1M", "--json", QString::fromStdString(path("cli-windows.json"))});
        QVERIFY2(code == 0, qPrintable(out));
        auto w = nlohmann::json::parse(test::readBytes(path("cli-windows.json")));
        QCOMPARE(w["jobs"].size(), b["jobs"].size());
        bool windowed = false;
        for (std::size_t j = 0; j < w["jobs"].size(); ++j) {
            QCOMPARE(w["jobs"][j]["tp"], b["jobs"][j]["tp"]);
            QCOMPARE(w["jobs"][j]["dp"], b["jobs"][j]["dp"]);
            QCOMPARE(w["jobs"][j]["pp"], b["jobs"][j]["pp"]);
            QCOMPARE(w["jobs"][j]["steps"].size(), b["jobs"][j]["steps"].size());
            for (const auto& n : w["jobs"][j]["notes"])
                windowed |= n.get<std::string>().find("windows of") != std::string::npos;
        }
        QVERIFY2(windowed, w.dump(1).substr(0, 2000).c_str());
        // A second export into the same table is refused with exit code 1.
        std::tie(code, out) = run({"export-clickhouse", QString::fromStdString(dir), "--url", u});
        QCOMPARE(code, 1);
        QVERIFY2(out.contains("already holds"), qPrintable(out));
    }
};

QTEST_GUILESS_MAIN(TestClickHouse)
#include "tst_clickhouse.moc"
