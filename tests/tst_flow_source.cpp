// What a capture is: flow data detected by content (never by name), several files merged, --topology for a
// lone file, files that are not flow data skipped in a folder; `convert` round trips; the time resolution check.
#include "test_util.h"
#include "analysis/pipeline.h"
#include "analysis/resolution.h"
#include "io/flow_source.h"
#include "io/report_json.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <random>

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace prism;
using namespace prism::test;

namespace {

namespace fs = std::filesystem;

std::string data(const std::string& name) { return std::string(LLMPRISM_TEST_DATA) + "/" + name; }

struct Run {
    int code;
    QString out;
    QString err;
};

Run cli(const QStringList& args) {
    QProcess p;
    p.start(LLMPRISM_CLI, args);
    if (!p.waitForFinished(300000)) return {-1, {}, "timed out"};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// The report's jobs (and notes) as JSON, without the capture summary, which names the source files.
nlohmann::json jobsOf(const std::string& reportPath) {
    auto j = nlohmann::json::parse(readBytes(reportPath));
    return {{"jobs", j["jobs"]}, {"notes", j.value("notes", nlohmann::json::array())}};
}

std::vector<FlowRecord> records(const FlowTable& t) {
    std::vector<FlowRecord> out;
    for (std::size_t i = 0; i < t.size(); ++i) out.push_back(t.record(i));
    return out;
}

bool same(const FlowRecord& a, const FlowRecord& b) {
    return a.startNs == b.startNs && a.endNs == b.endNs && a.src == b.src && a.dst == b.dst &&
           a.srcPort == b.srcPort && a.dstPort == b.dstPort && a.proto == b.proto && a.bytes == b.bytes &&
           a.packets == b.packets;
}

} // namespace

class TestFlowSource : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string tmp(const std::string& name) { return (fs::path(m_tmp.path().toStdString()) / name).string(); }

private slots:
    void initTestCase() { QVERIFY(m_tmp.isValid()); }

    void detectionIsByContentNotByName_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("what");
        auto file = [](const std::string& path) { return QByteArray::fromStdString(readBytes(path)); };
        QTest::newRow("pcap named .csv") << "capture.csv" << file(data("flow-exports/ndpi/netflowv9.pcap"))
                                         << int(SourceKind::Pcap) << "pcap";
        QTest::newRow("pcapng") << "trace.dat" << QByteArray("\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a", 12)
                                << int(SourceKind::Pcapng) << "pcapng";
        QTest::newRow("IPFIX file") << "export.csv"
                                    << QByteArray("\x00\x0a\x00\x10\x65\x93\x9a\x25\x00\x00\x00\x01\x00\x00\x00\x00", 16)
                                    << int(SourceKind::IpfixFile) << "IPFIX file";
        QTest::newRow("flows.csv named .txt") << "notes.txt" << file(data("readers/capture_ok/flows.csv"))
                                              << int(SourceKind::FlowsCsv) << "flows.csv";
        QTest::newRow("nfdump csv named .bin") << "data.bin" << file(data("collector/nfdump-1.7.1.csv"))
                                               << int(SourceKind::CollectorCsv) << "nfdump csv (1.6, 1.7.0-1.7.4)";
        QTest::newRow("pmacct named .json") << "x.json" << file(data("collector/pmacct.csv"))
                                            << int(SourceKind::CollectorCsv) << "pmacct csv";
        QTest::newRow("topology named .dat") << "net.dat" << file(data("readers/capture_ok/topology.json"))
                                             << int(SourceKind::Topology) << "topology.json";
        QTest::newRow("a report") << "flows.csv" << QByteArray(R"({"format": "llmprism-report", "version": 1, "jobs": []})")
                                  << int(SourceKind::Other) << "JSON without a top-level \"hosts\" (not a topology)";
        // "hosts" counts as a key of the top-level object only, and in a well-formed file only.
        QTest::newRow("hosts nested") << "a.json" << QByteArray(R"({"cluster": {"hosts": []}, "x": [{"hosts": 1}]})")
                                      << int(SourceKind::Other)
                                      << "JSON without a top-level \"hosts\" (not a topology)";
        QTest::newRow("hosts in an array") << "a.json" << QByteArray(R"([{"hosts": []}])") << int(SourceKind::Other)
                                           << "JSON without a top-level \"hosts\" (not a topology)";
        QTest::newRow("hosts, then broken")
            << "a.json" << QByteArray(R"({"hosts": [], "nics": [1, 2)") << int(SourceKind::Other)
            << "JSON without a top-level \"hosts\" (not a topology)";
        QTest::newRow("hosts last") << "a.json" << QByteArray(R"({"nics": [{"hosts": 2}], "hosts": []})")
                                    << int(SourceKind::Topology) << "topology.json";
        QTest::newRow("a README") << "flows.csv.gz" << QByteArray("# Capture of 2024-01-02\n\nTaken on rack 3.\n")
                                  << int(SourceKind::Other) << "text whose first line is \"Taken on rack 3.\"";
        QTest::newRow("empty") << "flows.csv" << QByteArray() << int(SourceKind::Other) << "an empty text file";
        QTest::newRow("a PNG") << "flows.csv" << QByteArray("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) << int(SourceKind::Other)
                               << "binary data of no known kind";
    }
    void detectionIsByContentNotByName() {
        QFETCH(QString, name);
        QFETCH(QByteArray, bytes);
        QFETCH(int, kind);
        QFETCH(QString, what);
        fs::create_directories(tmp("detect"));
        std::string path = tmp("detect/" + name.toStdString());
        writeBytes(path, bytes.toStdString());
        SourceInfo info = detectSource(path);
        QCOMPARE(int(info.kind), kind);
        QCOMPARE(QString::fromStdString(info.what), what);
        QVERIFY(!info.gzip);
        // Compressed, the content is still what counts.
        writeGzip(path + ".gz", bytes.toStdString());
        SourceInfo gz = detectSource(path + ".gz");
        if (kind != int(SourceKind::Topology)) QCOMPARE(int(gz.kind), kind); // topologies are read plain only
        QVERIFY(gz.gzip);
    }

    void aFileThatIsNotFlowDataIsRefusedWithWhatWasFoundAndExpected() {
        writeBytes(tmp("readme.csv"), "Taken on rack 3.\n");
        try {
            loadCapture(tmp("readme.csv"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, tmp("readme.csv"));
            QVERIFY2(contains(e.issue().message, "not flow data: found text whose first line is \"Taken on rack 3.\"; "
                                                 "expected flows.csv, nfdump -o csv / csv-fast, pmacct CSV, a pcap or "
                                                 "pcapng capture, an IPFIX file, or a ClickHouse table"),
                     e.what());
        }
    }

    // A folder of several flow files of different kinds is one capture: every record once, sorted by start;
    // truth.json, a report and a README are skipped without a word.
    void aFolderWithSeveralFlowFilesMergesThemAndSkipsTheRest() {
        fs::create_directories(tmp("several"));
        fs::copy_file(data("collector/nfdump-1.7.5.csv"), tmp("several/a.csv"));
        fs::copy_file(data("collector/pmacct.csv"), tmp("several/pmacct-2024.txt"));
        fs::copy_file(data("readers/capture_ok/flows.csv"), tmp("several/flows.csv"));
        fs::copy_file(data("readers/capture_ok/topology.json"), tmp("several/topology.json"));
        writeBytes(tmp("several/truth.json"), R"({"format": "llmprism-report", "version": 1, "jobs": []})");
        writeBytes(tmp("several/README.md"), "Two collectors and our exporter.\n");
        Capture c = loadCapture(tmp("several"));
        QCOMPARE(c.flowsPaths.size(), std::size_t(3));
        QCOMPARE(c.flowsKinds.size(), std::size_t(3));
        QCOMPARE(c.flowsPath, c.flowsPaths.front());
        QCOMPARE(c.topologyPath, tmp("several/topology.json"));
        QCOMPARE(c.diagnostics.skippedRows, std::uint64_t(0));
        LoadDiagnostics d;
        std::size_t want = readFlowsCsv(data("readers/capture_ok/flows.csv"), {}, d).size() +
                           2 * readFlowsCsv(data("collector/expected.csv"), {}, d).size();
        QCOMPARE(c.flows.size(), want);
        QVERIFY(c.flows.isSortedByStart());
        std::string kinds;
        for (const auto& k : c.flowsKinds) kinds += k + "; ";
        QVERIFY2(contains(kinds, "nfdump csv (1.7.5+)") && contains(kinds, "pmacct csv") && contains(kinds, "flows.csv"),
                 kinds.c_str());
        for (const InputIssue& w : c.diagnostics.warnings) {
            QVERIFY2(!contains(w.file, "truth.json") && !contains(w.file, "README"), w.toString().c_str());
        }
        // The same files named one by one make the same capture.
        Capture named = loadCapture(std::vector<std::string>{tmp("several/a.csv"), tmp("several/pmacct-2024.txt"),
                                                             tmp("several/flows.csv"), tmp("several/topology.json")});
        QCOMPARE(named.flows.size(), c.flows.size());
        auto a = records(named.flows), b = records(c.flows);
        for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(same(a[i], b[i]));
    }

    void aFolderWithoutFlowDataSaysWhatItHolds() {
        fs::create_directories(tmp("noflows"));
        writeBytes(tmp("noflows/truth.json"), R"({"format": "llmprism-report", "version": 1, "jobs": []})");
        writeBytes(tmp("noflows/README.md"), "Nothing here yet.\n");
        try {
            loadCapture(tmp("noflows"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "no flows.csv or flows.csv.gz in " + tmp("noflows")), e.what());
            QVERIFY2(contains(e.issue().message, "README.md: text whose first line is \"Nothing here yet.\""), e.what());
            QVERIFY2(contains(e.issue().message, "truth.json: JSON without a top-level \"hosts\""), e.what());
        }
    }

    void aLoneFlowFileTakesTheTopologyGiven() {
        fs::create_directories(tmp("lone"));
        fs::copy_file(data("collector/nfdump-csv-fast.csv"), tmp("lone/export"));
        LoadOptions lo;
        lo.topologyPath = data("readers/capture_ok/topology.json");
        Capture c = loadCapture(tmp("lone/export"), lo);
        QVERIFY(c.hasTopology);
        QCOMPARE(c.topologyPath, lo.topologyPath);
        QCOMPARE(c.flows.size(), std::size_t(5));
        Capture without = loadCapture(tmp("lone/export"));
        QVERIFY(!without.hasTopology);
    }

    void aGzipNextToItsPlainFileIsReadOnce() {
        fs::create_directories(tmp("twice"));
        fs::copy_file(data("readers/capture_ok/flows.csv"), tmp("twice/flows.csv"));
        writeGzip(tmp("twice/flows.csv.gz"), readBytes(data("readers/capture_ok/flows.csv")));
        Capture c = loadCapture(tmp("twice"));
        LoadDiagnostics d;
        QCOMPARE(c.flows.size(), readFlowsCsv(data("readers/capture_ok/flows.csv"), {}, d).size());
        QCOMPARE(c.flowsPaths, std::vector<std::string>{tmp("twice/flows.csv")});
        bool warned = false;
        for (const InputIssue& w : c.diagnostics.warnings) warned = warned || contains(w.toString(), "skipped: flows.csv is in the same folder");
        QVERIFY(warned);
    }

    // convert then analyze gives the report of analyzing the source itself: for our own flows.csv (gzip out)
    // and for a collector CSV.
    void convertRoundTripsToTheSameReport() {
        Run sim = cli({"simulate", "--preset", "tiny", "--out", QString::fromStdString(tmp("rt"))});
        QVERIFY2(sim.code == 0, qPrintable(sim.err));
        Run conv = cli({"convert", QString::fromStdString(tmp("rt")), "--out", QString::fromStdString(tmp("rt-out.csv.gz"))});
        QVERIFY2(conv.code == 0, qPrintable(conv.err));
        QVERIFY(conv.out.contains("(flows.csv)"));
        Run a = cli({"analyze", QString::fromStdString(tmp("rt")), "--quiet", "--json", QString::fromStdString(tmp("rt-a.json"))});
        Run b = cli({"analyze", QString::fromStdString(tmp("rt-out.csv.gz")), "--topology",
                     QString::fromStdString(tmp("rt/topology.json")), "--quiet", "--json", QString::fromStdString(tmp("rt-b.json"))});
        QVERIFY2(a.code == 0 && b.code == 0, qPrintable(a.err + b.err));
        QVERIFY(!jobsOf(tmp("rt-a.json"))["jobs"].empty());
        QCOMPARE(jobsOf(tmp("rt-b.json")).dump(), jobsOf(tmp("rt-a.json")).dump());
        // The comment names the source; the reader skips it.
        SourceInfo info = detectSource(tmp("rt-out.csv.gz"));
        QCOMPARE(int(info.kind), int(SourceKind::FlowsCsv));
        QVERIFY(info.gzip);

        const QString nf = QString::fromStdString(data("collector/nfdump-1.7.5.csv"));
        Run c1 = cli({"convert", nf, "--out", QString::fromStdString(tmp("nf.csv"))});
        QVERIFY2(c1.code == 0, qPrintable(c1.err));
        QVERIFY2(contains(readBytes(tmp("nf.csv")), "# converted by llmprism-cli"), readBytes(tmp("nf.csv")).c_str());
        QVERIFY(contains(readBytes(tmp("nf.csv")), "nfdump csv (1.7.5+), local times read as UTC"));
        Run x = cli({"analyze", nf, "--quiet", "--json", QString::fromStdString(tmp("nf-a.json"))});
        Run y = cli({"analyze", QString::fromStdString(tmp("nf.csv")), "--quiet", "--json", QString::fromStdString(tmp("nf-b.json"))});
        QVERIFY2(x.code == 0 && y.code == 0, qPrintable(x.err + y.err));
        QCOMPARE(jobsOf(tmp("nf-b.json")).dump(), jobsOf(tmp("nf-a.json")).dump());
    }

    // A packet capture (the simulator's RoCEv2 pcap) converted to flows.csv analyzes to the report of the pcap
    // itself, and the '#' comment names the flow timeouts used.
    void aPcapConvertsToFlowsThatAnalyzeLikeThePcap() {
        Run sim = cli({"simulate", "--preset", "tiny", "--format", "pcap", "--out", QString::fromStdString(tmp("pc"))});
        if (sim.code != 0) QSKIP("this build's simulate has no --format pcap");
        const QString pcap = QString::fromStdString(tmp("pc/capture.pcap"));
        Run conv = cli({"convert", pcap, "--out", QString::fromStdString(tmp("pc-flows.csv")), "--quiet"});
        QVERIFY2(conv.code == 0, qPrintable(conv.err));
        const std::string text = readBytes(tmp("pc-flows.csv"));
        QVERIFY2(contains(text, "flow timeouts idle "), text.substr(0, 300).c_str());
        QVERIFY(contains(text.substr(0, 1000), "retransmits,cnps,ecn_ce"));
        Run a = cli({"analyze", pcap, "--quiet", "--json", QString::fromStdString(tmp("pc-a.json"))});
        Run b = cli({"analyze", QString::fromStdString(tmp("pc-flows.csv")), "--topology",
                     QString::fromStdString(tmp("pc/topology.json")), "--quiet", "--json", QString::fromStdString(tmp("pc-b.json"))});
        QVERIFY2(a.code == 0 && b.code == 0, qPrintable(a.err + b.err));
        QVERIFY(!jobsOf(tmp("pc-a.json"))["jobs"].empty());
        QCOMPARE(jobsOf(tmp("pc-b.json")).dump(), jobsOf(tmp("pc-a.json")).dump());
        fs::remove(tmp("pc/capture.pcap")); // hundreds of MB
    }

    void congestionColumnsSurviveConvert() {
        writeBytes(tmp("cong.csv"), "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets,retransmits,cnps,ecn_ce\n"
                                    "100,200,10.0.0.1,10.0.0.2,1,4791,17,4096,4,2,1,3\n"
                                    "150,250,10.0.0.2,10.0.0.1,1,4791,17,4096,4,,0,0\n"
                                    "120,130,10.0.0.2,10.0.0.1,1,4791,17,4096,4,x,0,0\n");
        LoadDiagnostics d;
        FlowTable t = readFlowsCsv(tmp("cong.csv"), {}, d);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(d.skippedRows, std::uint64_t(1));
        QCOMPARE(d.errors.front().toString(), tmp("cong.csv") + ":4:10: retransmits \"x\": expected an integer 0..4294967295");
        QVERIFY(t.hasCongestion());
        QCOMPARE(t.retransmits, (std::vector<std::uint32_t>{2, 0}));
        QCOMPARE(t.cnps, (std::vector<std::uint32_t>{1, 0}));
        QCOMPARE(t.ecnCe, (std::vector<std::uint32_t>{3, 0}));
        writeFlowsCsv(t, tmp("cong-out.csv"), {"a comment"});
        FlowTable back = readFlowsCsv(tmp("cong-out.csv"), {}, d);
        QCOMPARE(back.retransmits, t.retransmits);
        QCOMPARE(back.cnps, t.cnps);
        QCOMPARE(back.ecnCe, t.ecnCe);
        // A table without them writes none.
        FlowTable plain = readFlowsCsv(data("readers/capture_ok/flows.csv"), {}, d);
        writeFlowsCsv(plain, tmp("plain-out.csv"));
        QVERIFY(!contains(readBytes(tmp("plain-out.csv")), "retransmits"));
    }

    void resolutionIsMeasuredFromTheStamps() {
        FlowTable t;
        for (int i = 0; i < 10; ++i)
            t.append({std::int64_t(i) * 1'000'000'000, std::int64_t(i) * 1'000'000'000 + 60'000'000'000,
                      *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 100, 1});
        TimeResolution r = measureResolution(t);
        QCOMPARE(r.stampGranularityNs, std::int64_t(1'000'000'000));
        QCOMPARE(r.typicalSpanNs, std::int64_t(60'000'000'000));
        QVERIFY(r.fixedSpan);
        t.startNs.set(3, t.startNs[3] + 5'000'000); // one start at a millisecond: the stamps are milliseconds
        QCOMPARE(measureResolution(t).stampGranularityNs, std::int64_t(1'000'000));
        t.startNs.set(4, t.startNs[4] + 7); // and now nanoseconds
        QCOMPARE(measureResolution(t).stampGranularityNs, std::int64_t(1));
    }

    // The typical span is the upper median of the RoCE records' spans (all records' without RoCE), selected
    // without a copy of them: against nth_element over spans of every size (zero, below zero, beyond 2^48),
    // counts odd and even, RoCE among other traffic and alone.
    void theTypicalSpanIsTheUpperMedian() {
        std::mt19937_64 rng(11);
        const IpAddr a = *IpAddr::parse("10.0.0.1"), b = *IpAddr::parse("10.0.0.2");
        for (int round = 0; round < 40; ++round) {
            FlowTable t;
            const int rows = 1 + int(rng() % 3000);
            const bool roceOnlySome = round % 3 == 0, noRoce = round % 7 == 6;
            std::vector<std::int64_t> spans;
            for (int i = 0; i < rows; ++i) {
                std::int64_t span = std::int64_t(rng() % 5'000'000);
                if (round % 4 == 1) span = std::int64_t(rng() % 3); // many ties
                if (round % 5 == 2 && i % 10 == 0) span = -std::int64_t(rng() % 1000);
                if (round % 6 == 3 && i % 3 == 0) span = std::int64_t(rng() >> 8); // beyond 2^48
                const bool roce = !noRoce && (!roceOnlySome || i % 2 == 0);
                t.append({std::int64_t(i) * 1000, std::int64_t(i) * 1000 + span, a, b, 1,
                          std::uint16_t(roce ? 4791 : 2049), std::uint8_t(roce ? 17 : 6), 100, 1});
                if (roce || noRoce) spans.push_back(span);
            }
            const auto mid = spans.begin() + std::ptrdiff_t(spans.size() / 2);
            std::nth_element(spans.begin(), mid, spans.end());
            const TimeResolution r = measureResolution(t);
            QCOMPARE(r.records, spans.size());
            QCOMPARE(r.typicalSpanNs, *mid);
        }
    }

    // The simulator's capture with its stamps cut to whole seconds (as nfdump before 1.7.5 prints them): the
    // report says what was found and how to fix it; the original capture gets no such note.
    void wholeSecondStampsAreReportedAsTooCoarseForTheSteps() {
        sim::SimResult run = simulatePreset("tiny", 1);
        Capture fine = captureOf(run);
        Report fineReport = analyzeCapture(fine);
        for (const std::string& n : fineReport.notes) QVERIFY2(!contains(n, "time resolution"), n.c_str());
        Capture coarse = fine;
        for (std::size_t i = 0; i < coarse.flows.size(); ++i) {
            std::int64_t duration = coarse.flows.end(i) - coarse.flows.startNs[i];
            coarse.flows.startNs.set(i, coarse.flows.startNs[i] - coarse.flows.startNs[i] % 1'000'000'000);
            coarse.flows.setEnd(i, coarse.flows.startNs[i] + duration - duration % 1'000'000);
        }
        coarse.flows.sortByStart();
        Report report = analyzeCapture(coarse);
        std::string notes;
        for (const std::string& n : report.notes) notes += n + "\n";
        QVERIFY2(contains(notes, "time resolution: whole-second stamps"), notes.c_str());
        QVERIFY2(contains(notes, "use nfdump 1.7.5 or later, or -o csv-fast"), notes.c_str());
        QVERIFY2(contains(notes, "flowStartMilliseconds"), notes.c_str());
        QVERIFY(!report.jobs.empty()); // the jobs are still given
        QCOMPARE(report.jobs.front().gpus.size(), fineReport.jobs.front().gpus.size());
    }

    // Records all stamped in the first day of 1970 (a collector that took the exporter's times in another unit:
    // softflowd -A nano into nfcapd 1.7.1) carry no wall-clock time: a note says so and what fixes it. Records
    // of today's date give no such note.
    void recordsStampedNearTheEpochAreSaidToCarryNoTime() {
        Capture capture = captureOf(simulatePreset("tiny", 2));
        const std::int64_t first = capture.flows.startNs[0];
        for (std::size_t i = 0; i < capture.flows.size(); ++i) {
            const std::int64_t end = capture.flows.end(i);
            capture.flows.startNs.set(i, capture.flows.startNs[i] - first + 5'000'000'000);
            capture.flows.setEnd(i, end - first + 5'000'000'000);
        }
        std::string notes;
        for (const std::string& n : analyzeCapture(capture).notes) notes += n + "\n";
        QVERIFY2(contains(notes, "every record lies within the first day of 1970"), notes.c_str());
        QVERIFY2(contains(notes, "-A milli"), notes.c_str());
        for (const std::string& n : analyzeCapture(captureOf(simulatePreset("tiny", 2))).notes)
            QVERIFY2(!contains(n, "1970"), n.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFlowSource)
#include "tst_flow_source.moc"
