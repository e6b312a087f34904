// Staged analysis (analysis/staged.h) against the whole-table analysis: the same report from a store that is
// asked for grouped rows and then one job's records at a time.
#include "analysis/staged.h"
#include "model/units.h"
#include "io/file_store.h"
#include "io/report_json.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>

#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <cstddef>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace prism;

class TestStaged : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string path(const std::string& name) const { return (m_dir.path() + "/" + name.c_str()).toStdString(); }

    // The capture on disk analysed in stages from its files against the same capture loaded whole.
    static void compareFiles(const std::vector<std::string>& sources, const LoadOptions& lo = {},
                             StagedStats* stats = nullptr, std::uint64_t budget = 0) {
        const Capture whole = loadCapture(sources, lo);
        const std::string expected = test::reportText(analyzeCapture(whole));
        FileStore store(sources, lo);
        const Report staged = analyzeStore(store, store.topology(), store.hasTopology(), {}, stats, budget);
        const std::string got = test::reportText(staged);
        QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
    }

    static void compareStaged(const Capture& capture, StagedStats* stats = nullptr) {
        const Report whole = analyzeCapture(capture);
        TableStore store(capture.flows, "memory", capture.diagnostics);
        const Report staged = analyzeStore(store, capture.topology, capture.hasTopology, {}, stats);
        QCOMPARE(staged.capture->source, std::string("memory"));
        const std::string a = test::reportText(whole), b = test::reportText(staged);
        QVERIFY2(a == b, test::firstDifference(a, b).c_str());
    }

private slots:
    void everyPresetGivesTheSameReport_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        for (const std::string& name : sim::presetNames()) {
            if (name == "large") continue; // 6M records: the bench's, not a unit test's
            for (int seed : {1, 2})
                QTest::newRow((name + "/" + std::to_string(seed)).c_str()) << QString::fromStdString(name) << seed;
        }
    }
    void everyPresetGivesTheSameReport() {
        QFETCH(QString, preset);
        QFETCH(int, seed);
        const auto result = test::simulatePreset(preset.toStdString().c_str(), seed);
        StagedStats stats;
        compareStaged(test::captureOf(result), &stats);
        // Every job's records are fetched once and only once: no more than the RoCE records.
        std::uint64_t roce = 0;
        for (std::size_t i = 0; i < result.flows.size(); ++i) roce += result.flows.isRoce(i);
        QVERIFY(stats.fetchedRecords <= roce);
        QVERIFY(stats.groupedRows <= roce);
        QVERIFY(stats.largestJob > 0 || roce == 0);
    }

    // Restarts (same NICs, new connections), lost records and anomalies: epochs split endpoints between jobs.
    void variantsGiveTheSameReport_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("anomaly");
        QTest::addColumn<double>("loss");
        QTest::newRow("restart") << "restart" << "" << 0.0;
        QTest::newRow("two-jobs lossy") << "two-jobs" << "" << 0.02;
        QTest::newRow("slow rank") << "pp-anomalies" << "slow_rank:steps=8-12,factor=1.6" << 0.0;
        QTest::newRow("shared nics") << "shared-nics" << "" << 0.01;
    }
    void variantsGiveTheSameReport() {
        QFETCH(QString, preset);
        QFETCH(QString, anomaly);
        QFETCH(double, loss);
        const auto names = sim::presetNames();
        if (std::find(names.begin(), names.end(), preset.toStdString()) == names.end())
            QSKIP("no such preset in this build");
        sim::SimConfig config = test::presetConfig(preset.toStdString().c_str(), 7);
        config.lossRate = loss;
        if (!anomaly.isEmpty()) config.anomalies.push_back(sim::parseAnomaly(anomaly.toStdString(), config, 7, 0));
        compareStaged(test::captureOf(sim::simulate(config)));
    }

    // Files of other kinds: collector CSVs with whole-second stamps (the resolution note), a pcap.
    void capturesOnDiskGiveTheSameReport_data() {
        QTest::addColumn<QString>("path");
        const QString data = LLMPRISM_TEST_DATA;
        for (const char* p : {"nfdump-1.6.csv", "nfdump-1.7.5.csv", "pmacct.csv"})
            QTest::newRow(p) << data + "/collector/" + p;
        QTest::newRow("readers capture") << data + "/readers/capture_ok";
        for (const char* s : {"two-jobs", "anomalies", "shared-hosts"})
            QTest::newRow(s) << QString(LLMPRISM_SOURCE_DIR) + "/samples/" + s;
    }
    void capturesOnDiskGiveTheSameReport() {
        QFETCH(QString, path);
        if (!QFileInfo::exists(path)) QSKIP("not in this checkout");
        const Capture c = loadCapture(path.toStdString());
        if (path.contains("/samples/")) QVERIFY(c.flows.startNs.compacted()); // a dense capture: 4 bytes a start
        compareStaged(c);
        compareFiles({path.toStdString()}); // in stages from the file: the resolution rides on a fetch
    }

    // FileStore (io/file_store.h): streamed passes over the files give the report of the capture loaded whole,
    // messages included.
    void filesInStagesGiveTheSameReport_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        QTest::addColumn<double>("loss");
        QTest::addColumn<bool>("gzip");
        QTest::newRow("two-jobs") << "two-jobs" << 3 << 0.0 << false;
        QTest::newRow("restart gz") << "restart" << 7 << 0.0 << true;
        QTest::newRow("shared-nics lossy") << "shared-nics" << 5 << 0.01 << false;
        QTest::newRow("fsdp") << "fsdp" << 2 << 0.0 << true;
        QTest::newRow("megatron-8 lossy") << "megatron-8" << 4 << 0.02 << false;
    }
    void filesInStagesGiveTheSameReport() {
        QFETCH(QString, preset);
        QFETCH(int, seed);
        QFETCH(double, loss);
        QFETCH(bool, gzip);
        sim::SimConfig config = test::presetConfig(preset.toStdString().c_str(), seed);
        config.lossRate = loss;
        const std::string dir = path("files-" + QString(QTest::currentDataTag()).replace(' ', '_').toStdString());
        sim::writeCapture(sim::simulate(config), dir, gzip);
        StagedStats stats;
        compareFiles({dir}, {}, &stats);
        QVERIFY(stats.fetchedRecords > 0);
    }

    // Two flow files (one gzip), bad rows, RoCE endpoints the topology lacks, no topology, a time window.
    void filesOfEveryShapeGiveTheSameReport() {
        const auto r = test::simulatePreset("two-jobs", 5);
        const std::string dir = path("shapes");
        sim::writeCapture(r, dir);
        const Capture c = loadCapture(dir);
        std::vector<std::uint32_t> odd, even;
        for (std::uint32_t i = 0; i < c.flows.size(); ++i) (i % 2 ? odd : even).push_back(i);
        QDir().mkpath(QString::fromStdString(path("split")));
        writeFlowsCsv(c.flows, path("split/a.csv"), {}, &odd);
        writeFlowsCsv(c.flows, path("split/b.csv.gz"), {}, &even);
        // Bad rows and an endpoint no topology lists, in a third file.
        test::writeBytes(path("split/c.csv"), "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n"
                                              "1793491200000500000,1793491200000600000,10.99.0.1,10.99.0.2,5,4791,udp,"
                                              "100,1\nnot,a,row\n");
        std::filesystem::copy_file(dir + "/topology.json", path("split/topology.json"));
        compareFiles({path("split")});
        compareFiles({path("split/a.csv"), path("split/b.csv.gz")}); // no topology
        LoadOptions window;
        window.fromNs = c.flows.startNs[c.flows.size() / 3];
        window.toNs = c.flows.startNs[2 * c.flows.size() / 3];
        compareFiles({path("split")}, window);
        // A budget that holds every job: one pass fetches them all, the same report.
        StagedStats together;
        compareFiles({path("split")}, {}, &together, std::uint64_t(1) << 30);
        QCOMPARE(together.fetches, std::uint64_t(1));
        StagedStats apart;
        compareFiles({path("split")}, {}, &apart);
        QVERIFY(apart.fetches >= 2);
        const Capture cut = loadCapture(path("split"), window);
        QVERIFY(cut.flows.size() > 0 && cut.flows.size() < c.flows.size() + 1);
        for (std::int64_t s : cut.flows.startNs) QVERIFY(s >= window.fromNs && s < window.toNs);
    }

    // The resolution of the records, exactly as measured on the whole table, from a histogram and one pass.
    void theResolutionIsExactInBoundedMemory_data() {
        QTest::addColumn<int>("kind");
        QTest::newRow("fixed 60 s spans, whole seconds") << 0;
        QTest::newRow("continuous spans") << 1;
        QTest::newRow("spans at the 10% borders") << 2;
        QTest::newRow("no RoCE") << 3;
        QTest::newRow("microsecond stamps, short spans") << 4;
    }
    void theResolutionIsExactInBoundedMemory() {
        QFETCH(int, kind);
        std::string csv = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        std::uint64_t x = 12345;
        auto rnd = [&x] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
        for (int i = 0; i < 20000; ++i) {
            std::int64_t start = 1'700'000'000'000'000'000 + std::int64_t(i) * 1'000'000'000, span = 0;
            switch (kind) {
            case 0: span = 60'000'000'000; break;
            case 1: span = std::int64_t(rnd() % 5'000'000) + 1; start += std::int64_t(rnd() % 1000); break;
            case 2: span = i % 3 == 0 ? 1'000'000 : i % 3 == 1 ? 1'100'000 : 900'000 + std::int64_t(rnd() % 3); break;
            case 3: span = std::int64_t(rnd() % 100'000); break;
            case 4: span = std::int64_t(rnd() % 3000); start += std::int64_t(rnd() % 1000) * 1000; break;
            }
            csv += std::to_string(start) + "," + std::to_string(start + span) + ",10.0.0." + std::to_string(i % 7 + 1) +
                   ",10.0.0." + std::to_string(i % 5 + 1) + ",100," + (kind == 3 ? "22,6" : "4791,17") + ",1000,1\n";
        }
        const std::string file = path("resolution-" + std::to_string(kind) + ".csv");
        test::writeBytes(file, csv);
        const TimeResolution expected = measureResolution(loadCapture(file).flows);
        FileStore store({file}, {});
        store.overview();
        const TimeResolution got = store.resolution();
        QCOMPARE(expected.records, std::size_t(20000)); // every row read (all RoCE; all records without RoCE)
        QCOMPARE(got.records, expected.records);
        QCOMPARE(got.stampGranularityNs, expected.stampGranularityNs);
        QCOMPARE(got.typicalSpanNs, expected.typicalSpanNs);
        QCOMPARE(got.fixedSpan, expected.fixedSpan);
    }

    // Streaming a flows.csv, sequentially or in parallel parts, gives the rows and messages of reading it whole.
    void streamingReadsTheRowsAndMessagesOfAWholeRead() {
        const QString data = LLMPRISM_TEST_DATA;
        for (const char* name : {"readers/good_unsorted.csv", "readers/bad_ip.csv", "readers/bad_non_numeric.csv",
                                 "readers/good_comments.csv"}) {
            const std::string file = (data + "/" + name).toStdString();
            LoadDiagnostics wholeDiag;
            const FlowTable whole = readFlowsCsv(file, {}, wholeDiag);
            LoadOptions parallel; // and in parallel parts: each file split between two threads
            parallel.threads = 2;
            parallel.parallelFromBytes = 1;
            for (const LoadOptions& options : {LoadOptions{}, parallel}) {
                LoadDiagnostics streamDiag;
                std::vector<FlowTable> parts;
                streamFlowsCsv(file, options, streamDiag, 2, [&](const FlowTable& t) { parts.push_back(t); });
                FlowTable streamed = FlowTable::concatenate(std::move(parts));
                streamed.sortByStart();
                QCOMPARE(streamed.size(), whole.size());
                for (std::size_t i = 0; i < whole.size(); ++i) {
                    QCOMPARE(streamed.startNs[i], whole.startNs[i]);
                    QCOMPARE(streamed.endpoints.at(streamed.src[i]).toString(),
                             whole.endpoints.at(whole.src[i]).toString());
                    QCOMPARE(streamed.bytes[i], whole.bytes[i]);
                }
                QCOMPARE(streamDiag.skippedRows, wholeDiag.skippedRows);
                QCOMPARE(streamDiag.errors.size(), wholeDiag.errors.size());
                for (std::size_t k = 0; k < wholeDiag.errors.size(); ++k)
                    QCOMPARE(streamDiag.errors[k].toString(), wholeDiag.errors[k].toString());
            }
        }
    }

    // A window's records from a file store, as a sorted list of rows (addresses, not ids): the same rows whatever
    // the order of the file and the ids of the table.
    static std::vector<std::string> rowsOf(const FlowTable& t) {
        std::vector<std::string> rows;
        for (std::size_t i = 0; i < t.size(); ++i)
            rows.push_back(std::to_string(t.startNs[i]) + "," + std::to_string(t.end(i)) + "," +
                           t.endpoints.at(t.src[i]).toString() + "," + t.endpoints.at(t.dst[i]).toString() + "," +
                           std::to_string(t.srcPort[i]) + "," + std::to_string(t.bytes[i]) + "," +
                           std::to_string(t.packets[i]));
        std::sort(rows.begin(), rows.end());
        return rows;
    }
    static RecordSelection everySenderIn(const FlowTable& flows, std::int64_t from, std::int64_t to) {
        RecordSelection sel;
        for (EndpointId e = 0; e < flows.endpoints.size(); ++e) sel.ranges.push_back({flows.endpoints.at(e), from, to});
        return sel;
    }

    // After its first pass a file store knows where in time each file and each chunk of a plain flows.csv lies:
    // a window of time reads only the chunks (plain) or files (.gz) that can hold it, and gives the records a
    // whole read does; rows out of order are read where they are; a file changed since is read whole again. The
    // window-by-window analysis of a job over the budget gives the same report from the files as from memory.
    void aWindowReadsOnlyTheChunksThatHoldIt() {
        sim::SimConfig config = test::presetConfig("anomalies", 3);
        config.jobs.front().steps = 300;
        const sim::SimResult sim = sim::simulate(config);
        const Capture capture = test::captureOf(sim);
        const FlowTable& flows = capture.flows;
        const std::uint64_t n = flows.size();
        const std::string dir = path("window-index");
        sim::writeCapture(sim, dir); // plain, rows by start: ~25 MB, several 4 MiB chunks
        QVERIFY(std::filesystem::file_size(dir + "/flows.csv") > (std::uint64_t(16) << 20));
        TableStore memory(flows, "memory", capture.diagnostics);

        // The same report window by window (a budget of a quarter of the largest job), fewer records read.
        StagedStats all;
        analyzeStore(memory, capture.topology, capture.hasTopology, {}, &all);
        const std::uint64_t budget = all.largestJob * kStagedBytesPerRecord / 4;
        StagedStats fromMemory, fromFiles;
        const std::string expected =
            test::reportText(analyzeStore(memory, capture.topology, capture.hasTopology, {}, &fromMemory, budget));
        FileStore files({dir}, {});
        const std::string got =
            test::reportText(analyzeStore(files, files.topology(), files.hasTopology(), {}, &fromFiles, budget));
        QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
        QVERIFY(fromFiles.windows >= 4);
        // Every pass read whole would be passes × n.
        QVERIFY2(files.recordsRead() < std::uint64_t(files.passes()) * n - (fromFiles.windows - 1) * n / 2,
                 (std::to_string(files.recordsRead()) + " records read in " + std::to_string(files.passes()) +
                  " passes of " + std::to_string(n))
                     .c_str());

        // Windows of a tenth of the capture, each read against the table's.
        const std::int64_t first = flows.startNs.front(), span = flows.startNs.back() - first;
        const std::uint64_t rowsPerChunk =
            n * (std::uint64_t(4) << 20) / std::filesystem::file_size(dir + "/flows.csv") + 1;
        auto checkWindows = [&](FileStore& store, bool fewer) {
            for (int w = 0; w < 10; ++w) {
                const std::int64_t from = first + span * w / 10, to = first + span * (w + 1) / 10;
                const std::uint64_t before = store.recordsRead();
                const FlowTable a = store.roceRecords(everySenderIn(flows, from, to));
                const FlowTable b = memory.roceRecords(everySenderIn(flows, from, to));
                QVERIFY(b.size() > 0);
                QVERIFY(rowsOf(a) == rowsOf(b));
                const std::uint64_t read = store.recordsRead() - before;
                QVERIFY(read >= b.size());
                // Sorted by start: the window's rows and at most a chunk's on each side (4 MiB of rows each).
                const auto inWindow = std::uint64_t(std::lower_bound(flows.startNs.begin(), flows.startNs.end(), to) -
                                                    std::lower_bound(flows.startNs.begin(), flows.startNs.end(), from));
                if (fewer)
                    QVERIFY2(read <= inWindow + 2 * rowsPerChunk,
                             (std::to_string(read) + " read for " + std::to_string(inWindow)).c_str());
                else QCOMPARE(read, n);
            }
        };
        checkWindows(files, true);
        // Outside every record: nothing read.
        const std::uint64_t before = files.recordsRead();
        QCOMPARE(files.roceRecords(everySenderIn(flows, first + 2 * span, first + 3 * span)).size(), std::size_t(0));
        QCOMPARE(files.recordsRead(), before);

        // The file rewritten (the same rows in reverse order): read whole once, then by its new index. It keeps the
        // size and the modification time, as `cp -p` or `rsync -t` would: its inode and status-change time tell.
        std::vector<std::uint32_t> reverse(flows.size());
        for (std::uint32_t i = 0; i < flows.size(); ++i) reverse[i] = std::uint32_t(flows.size()) - 1 - i;
        const auto size = std::filesystem::file_size(dir + "/flows.csv");
        const auto mtime = std::filesystem::last_write_time(dir + "/flows.csv");
        writeFlowsCsv(flows, dir + "/flows.csv", {}, &reverse);
        std::filesystem::last_write_time(dir + "/flows.csv", mtime);
        QCOMPARE(std::filesystem::file_size(dir + "/flows.csv"), size);
        {
            const std::uint64_t at = files.recordsRead();
            const std::size_t warned = files.diagnostics().warnings.size();
            const FlowTable a = files.roceRecords(everySenderIn(flows, first, first + span / 10));
            QCOMPARE(files.recordsRead() - at, n);
            // Said: what was found before came from what the file held then.
            QCOMPARE(files.diagnostics().warnings.size(), warned + 1);
            QVERIFY2(files.diagnostics().warnings.back().message.find("changed since it was first read") !=
                         std::string::npos,
                     files.diagnostics().warnings.back().message.c_str());
            QVERIFY(rowsOf(a) == rowsOf(memory.roceRecords(everySenderIn(flows, first, first + span / 10))));
        }
        checkWindows(files, true);

        // Rows in no order at all: each chunk spans the whole capture, so every window reads it all, rightly.
        std::vector<std::uint32_t> shuffled(flows.size());
        std::iota(shuffled.begin(), shuffled.end(), 0u);
        std::uint64_t x = 7;
        for (std::size_t i = shuffled.size() - 1; i > 0; --i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(shuffled[i], shuffled[(x >> 33) % (i + 1)]);
        }
        const std::string mixed = path("window-index-shuffled");
        QDir().mkpath(QString::fromStdString(mixed));
        writeFlowsCsv(flows, mixed + "/flows.csv", {}, &shuffled);
        FileStore shuffledStore({mixed + "/flows.csv"}, {});
        shuffledStore.overview();
        checkWindows(shuffledStore, false);

        // Two .gz files, the first and the second half in time: a window in one half reads that file only.
        std::vector<std::uint32_t> early, late;
        for (std::uint32_t i = 0; i < flows.size(); ++i) (i < flows.size() / 2 ? early : late).push_back(i);
        const std::string halves = path("window-index-gz");
        QDir().mkpath(QString::fromStdString(halves));
        writeFlowsCsv(flows, halves + "/a.csv.gz", {}, &early);
        writeFlowsCsv(flows, halves + "/b.csv.gz", {}, &late);
        FileStore gz({halves + "/a.csv.gz", halves + "/b.csv.gz"}, {});
        gz.overview();
        gz.resolution(); // (a fetch before it reads every record for the resolution's exact values)
        const std::int64_t lateFrom = flows.startNs[late.front()] + 1;
        const std::uint64_t at = gz.recordsRead();
        const FlowTable a = gz.roceRecords(everySenderIn(flows, lateFrom, flows.startNs.back() + 1));
        QCOMPARE(gz.recordsRead() - at, std::uint64_t(late.size()));
        QVERIFY(rowsOf(a) == rowsOf(memory.roceRecords(everySenderIn(flows, lateFrom, flows.startNs.back() + 1))));
    }

    // Jobs one after the other on different NICs, each in a file of its own: a job is fetched by the span its
    // records start in (recognition saw them all), so the file of the other job is not read for it.
    void aJobIsFetchedFromTheFilesOfItsSpan() {
        const auto sim = test::simulatePreset("two-jobs", 4);
        Capture capture = test::captureOf(sim);
        const Analysis analysed = runAnalysis(capture);
        QCOMPARE(analysed.recognition.jobs.size(), std::size_t(2));
        std::vector<bool> later(capture.flows.endpoints.size(), false);
        for (EndpointId e : analysed.recognition.jobs[1].nics) later[e] = true;
        FlowTable& f = capture.flows;
        const std::int64_t shift = f.startNs.back() - f.startNs.front() + 1'000'000'000;
        std::vector<std::uint32_t> early, late;
        for (std::uint32_t i = 0; i < f.size(); ++i) {
            if (later[f.src[i]] || later[f.dst[i]]) {
                f.startNs.set(i, f.startNs[i] + shift); // (its end moves with it)
                late.push_back(i);
            } else {
                early.push_back(i);
            }
        }
        QVERIFY(!early.empty() && !late.empty());
        const std::string dir = path("sequential-jobs");
        QDir().mkpath(QString::fromStdString(dir));
        writeFlowsCsv(f, dir + "/a.csv", {}, &early);
        writeFlowsCsv(f, dir + "/b.csv", {}, &late);
        writeTopologyJson(capture.topology, dir + "/topology.json");
        const std::string expected = test::reportText(analyzeCapture(loadCapture(dir)));
        const std::uint64_t n = f.size();
        for (bool index : {true, false}) {
            FileStore store({dir}, {});
            store.setTimeIndex(index);
            const std::string got = test::reportText(analyzeStore(store, store.topology(), store.hasTopology()));
            QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
            // Recognition's three passes and the first fetch (the resolution rides on it) read every record; the
            // second job's fetch, with the index, only its own file.
            QCOMPARE(store.passes(), 5);
            if (index)
                QVERIFY2(store.recordsRead() <= 4 * n + std::max(early.size(), late.size()) &&
                             store.recordsRead() < 5 * n,
                         std::to_string(store.recordsRead()).c_str());
            else QCOMPARE(store.recordsRead(), 5 * n);
        }
    }

    // The chunk marks of a streamed flows.csv place its rows: reading the bytes between two marks gives the rows
    // between them, with the messages (and line numbers) of the whole read — after a byte-order mark, CRLF lines,
    // comments, a line longer than a chunk and a bad row; streamed in parallel parts, the same rows and messages
    // as streamed sequentially, endpoint ids kept from batch to batch, and marks that place rows as well.
    void aRangeBetweenChunkMarksReadsItsRows_data() {
        QTest::addColumn<int>("commentBytes");
        QTest::newRow("a short comment before the header") << 0;
        // A range's header is read from the file's start: a line longer than the first read (64 KiB) was taken
        // for the end of the file, and every range after the first read nothing.
        QTest::newRow("a comment over 64 KiB before the header") << 100000;
    }

    void aRangeBetweenChunkMarksReadsItsRows() {
        QFETCH(int, commentBytes);
        std::string csv = "\xEF\xBB\xBF# a comment before the header" + std::string(std::size_t(commentBytes), '.') +
                          "\r\nstart_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\r\n";
        const int rows = 150000;
        for (int i = 0; i < rows; ++i) {
            if (i == 100000) csv += "1700000000000000000,1700000000000000001,10.0.0.999,10.0.0.1,1,4791,17,1,1\r\n";
            if (i == 30000) csv += std::string(std::size_t(5) << 20, 'x') + "\r\n"; // over a chunk: refused
            if (i % 9000 == 0) csv += "# comment " + std::to_string(i) + "\r\n";
            const std::int64_t start = 1'700'000'000'000'000'000 + std::int64_t(i) * 1000;
            csv += std::to_string(start) + "," + std::to_string(start + 500) + ",10.0." + std::to_string(i % 200) +
                   ".1,10.1.0." + std::to_string(i % 7 + 1) + "," + std::to_string(1000 + i % 5000) + ",4791,17," +
                   std::to_string(i) + ",1\r\n";
        }
        const std::string file = path("marks.csv");
        test::writeBytes(file, csv);
        QVERIFY(csv.size() > (std::size_t(8) << 20)); // several 4 MiB chunks
        // Sequential, then in parallel parts (every part of the file split between two threads, 8 MiB rounds).
        LoadOptions sequential, parallel;
        sequential.threads = 1;
        parallel.threads = 2;
        parallel.parallelFromBytes = 1;
        std::vector<std::string> firstRows, firstMessages;
        for (const LoadOptions& options : {sequential, parallel}) {
            LoadDiagnostics wholeDiag;
            std::vector<std::string>
                rowsRead; // every row in file order: start and addresses (ids kept from batch to batch)
            struct Mark {
                std::uint64_t row, byte, line;
            };
            std::vector<Mark> marks;
            auto rowOf = [](const FlowTable& t, std::size_t i) {
                return std::to_string(t.startNs[i]) + " " + t.endpoints.at(t.src[i]).toString() + " " +
                       t.endpoints.at(t.dst[i]).toString();
            };
            std::vector<EndpointId> srcIds;
            std::vector<std::string> srcAddrs;
            streamFlowsCsv(
                file, options, wholeDiag, 40000,
                [&](const FlowTable& t, const std::vector<CsvChunkMark>& m) {
                    for (const CsvChunkMark& k : m) marks.push_back({rowsRead.size() + k.row, k.byte, k.line});
                    for (std::size_t i = 0; i < t.size(); ++i) {
                        rowsRead.push_back(rowOf(t, i));
                        // An id names the same address in every batch.
                        if (t.src[i] >= srcAddrs.size()) srcAddrs.resize(t.src[i] + 1);
                        if (srcAddrs[t.src[i]].empty()) srcAddrs[t.src[i]] = t.endpoints.at(t.src[i]).toString();
                        QCOMPARE(srcAddrs[t.src[i]], t.endpoints.at(t.src[i]).toString());
                    }
                },
                nullptr);
            std::vector<std::string> wholeMessages;
            for (const InputIssue& e : wholeDiag.errors) wholeMessages.push_back(e.toString());
            QCOMPARE(rowsRead.size(), std::size_t(rows));
            QCOMPARE(wholeMessages.size(), std::size_t(2)); // the overlong line, the bad address
            if (firstRows.empty()) {
                firstRows = rowsRead;
                firstMessages = wholeMessages;
            } else {
                QVERIFY(rowsRead == firstRows); // parallel: the rows and messages of the sequential stream
                QVERIFY(wholeMessages == firstMessages);
            }
            QVERIFY(marks.size() >= 3);
            std::vector<std::string> messages;
            for (std::size_t k = 0; k < marks.size(); ++k) {
                const CsvByteRange range{marks[k].byte, k + 1 < marks.size() ? marks[k + 1].byte : UINT64_MAX,
                                         marks[k].line};
                const std::uint64_t endRow = k + 1 < marks.size() ? marks[k + 1].row : rowsRead.size();
                LoadDiagnostics diag;
                std::vector<std::string> got;
                streamFlowsCsv(
                    file, options, diag, 40000,
                    [&](const FlowTable& t, const std::vector<CsvChunkMark>&) {
                        for (std::size_t i = 0; i < t.size(); ++i) got.push_back(rowOf(t, i));
                    },
                    &range);
                QVERIFY(got.size() == endRow - marks[k].row &&
                        std::equal(got.begin(), got.end(), rowsRead.begin() + std::ptrdiff_t(marks[k].row)));
                for (const InputIssue& e : diag.errors) messages.push_back(e.toString());
            }
            // Each message from exactly one range, as the whole read gives it.
            QVERIFY(messages == wholeMessages);
        }
    }

    // A job too big for the budget even window by window is refused by name, before its records are fetched.
    void aJobOverTheMemoryBudgetIsNamed() {
        const std::string dir = path("budget");
        sim::writeCapture(test::simulatePreset("tiny", 2), dir);
        FileStore store({dir}, {});
        StagedStats stats;
        try {
            analyzeStore(store, store.topology(), store.hasTopology(), {}, &stats, 1024);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            const std::string m = e.issue().message;
            QVERIFY2(m.find("job-0 (") == 0 && m.find("needs about") != std::string::npos &&
                         m.find("more than the memory budget of 1.0 KiB (--memory), even window by window") !=
                             std::string::npos,
                     m.c_str());
        }
        QCOMPARE(stats.fetches, std::uint64_t(0));
    }

    // A job over the budget is analysed window by window: no fetch holds more than the budget allows, and the
    // merged job has the whole analysis's parallelism, its steps (each from the window it starts in) and the
    // subjects of its rank and link findings. A job that fits is analysed as before.
    void aJobOverTheBudgetIsAnalysedWindowByWindow_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("parts");
        QTest::addColumn<int>("steps");
        QTest::newRow("anomalies, 120 steps, budget a third of job-a") << "anomalies" << 3 << 120;
        QTest::newRow("anomalies, 120 steps, budget a sixth of job-a") << "anomalies" << 6 << 120;
        QTest::newRow("pp-anomalies, 100 steps, budget a quarter") << "pp-anomalies" << 4 << 100;
        QTest::newRow("checkpoints, budget a quarter") << "checkpoints" << 4 << 0;
    }
    void aJobOverTheBudgetIsAnalysedWindowByWindow() {
        QFETCH(QString, preset);
        QFETCH(int, parts);
        QFETCH(int, steps);
        sim::SimConfig config = test::presetConfig(preset.toStdString().c_str(), 3);
        if (steps) config.jobs.front().steps = steps; // the anomalies keep their steps, early in the job
        const Capture capture = test::captureOf(sim::simulate(config));
        TableStore whole(capture.flows, "memory", capture.diagnostics);
        StagedStats all;
        const Report expected = analyzeStore(whole, capture.topology, capture.hasTopology, {}, &all);
        const std::uint64_t budget = all.largestJob * kStagedBytesPerRecord / std::uint64_t(parts);
        TableStore store(capture.flows, "memory", capture.diagnostics);
        StagedStats stats;
        const Report got = analyzeStore(store, capture.topology, capture.hasTopology, {}, &stats, budget);
        QVERIFY2(stats.windows >= std::uint64_t(parts), std::to_string(stats.windows).c_str());
        QVERIFY(stats.largestJob * kStagedBytesPerRecord <= budget);
        QCOMPARE(got.jobs.size(), expected.jobs.size());
        bool windowed = false;
        for (std::size_t j = 0; j < got.jobs.size(); ++j) {
            const JobInfo& a = got.jobs[j];
            const JobInfo& b = expected.jobs[j];
            QCOMPARE(a.id, b.id);
            QCOMPARE(a.gpus, b.gpus);
            QCOMPARE(a.tp, b.tp);
            QCOMPARE(a.pp, b.pp);
            QCOMPARE(a.dp, b.dp);
            QCOMPARE(a.dpGroups, b.dpGroups);
            QCOMPARE(a.ppChains, b.ppChains);
            const bool thisWindowed = std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
                return n.find("windows of") != std::string::npos;
            });
            windowed |= thisWindowed;
            if (!thisWindowed) {
                Report ra, rb;
                ra.jobs = {a};
                rb.jobs = {b};
                QCOMPARE(reportToJson(ra).dump(), reportToJson(rb).dump());
                continue;
            }
            // The same steps: as many, each boundary within 2% of the median step of the whole analysis.
            QCOMPARE(a.steps.size(), b.steps.size());
            std::vector<std::int64_t> d;
            for (const StepInfo& st : b.steps) d.push_back(st.durationNs());
            std::nth_element(d.begin(), d.begin() + std::ptrdiff_t(d.size() / 2), d.end());
            const std::int64_t tolerance = d[d.size() / 2] / 50;
            for (std::size_t i = 0; i < a.steps.size(); ++i) {
                QCOMPARE(a.steps[i].index, int(i));
                QVERIFY2(std::abs(a.steps[i].startNs - b.steps[i].startNs) <= tolerance &&
                             std::abs(a.steps[i].endNs - b.steps[i].endNs) <= tolerance,
                         ("step " + std::to_string(i)).c_str());
            }
            // The same subjects among the rank and link findings.
            auto subjects = [](const JobInfo& job) {
                std::set<std::string> out;
                for (const Finding& f : job.findings)
                    if (f.kind != "slow_step") out.insert(f.kind + " " + f.ip + " " + f.srcIp + ">" + f.dstIp);
                return out;
            };
            QCOMPARE(subjects(a), subjects(b));
        }
        QVERIFY(windowed);
    }

    // A view of a job too large to hold whole loads one window of its steps at a time (analyzeJobWindow): the
    // window holds the steps asked for, numbered as the staged report numbers them and within 2% of a median
    // step of them, with a timeline of every rank; windows that fit the budget cover the job; the window's
    // records stay within the budget.
    void aWindowOfAJobIsLoadedOnDemand() {
        sim::SimConfig config = test::presetConfig("anomalies", 4);
        config.jobs.front().steps = 90;
        const Capture capture = test::captureOf(sim::simulate(config));
        TableStore store(capture.flows, "memory", capture.diagnostics);
        StagedStats all;
        std::vector<StagedJob> jobs;
        const Report report = analyzeStore(store, capture.topology, capture.hasTopology, {}, &all, 0, &jobs);
        QCOMPARE(jobs.size(), report.jobs.size());
        const Analysis whole = runAnalysis(capture);
        int windowedJobs = 0;
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            const JobInfo& info = report.jobs[j];
            QCOMPARE(jobs[j].records, whole.recognition.jobs[j].recordCount);
            QCOMPARE(jobs[j].job.nics.size(), whole.recognition.jobs[j].nics.size());
            if (info.steps.size() < 60) continue; // a fifth of the job must hold its margins and some steps
            ++windowedJobs;
            const std::uint64_t budget = jobs[j].records * kStagedBytesPerRecord / 5;
            std::vector<std::int64_t> d;
            for (const StepInfo& st : info.steps) d.push_back(st.durationNs());
            std::nth_element(d.begin(), d.begin() + std::ptrdiff_t(d.size() / 2), d.end());
            const std::int64_t tolerance = d[d.size() / 2] / 50;
            int covered = 0;
            std::size_t windows = 0;
            for (int from = 0; from < int(info.steps.size()); ++windows) {
                const auto [first, last] = windowSteps(info, jobs[j], from, budget);
                QVERIFY(first == from || (first < from && last == int(info.steps.size()) - 1)); // the last: moved back
                QVERIFY(last >= from);
                QVERIFY(last - first + 1 < int(info.steps.size())); // a fifth of the records: not the whole job
                const JobWindow w = analyzeJobWindow(store, capture.topology, report, jobs, j, first, last, {}, budget);
                QVERIFY(w.records.size() * kStagedBytesPerRecord <= budget);
                QCOMPARE(w.info.id, info.id);
                QCOMPARE(w.info.tp * w.info.pp * w.info.dp, info.tp * info.pp * info.dp);
                QCOMPARE(w.analysed.timeline.ranks.size(), whole.jobs[j].timeline.ranks.size());
                QCOMPARE(w.analysed.timeline.steps.size(), w.info.steps.size());
                for (int s = first; s <= last; ++s) { // every step asked for, found by its staged number
                    const auto it = std::find_if(w.info.steps.begin(), w.info.steps.end(),
                                                 [&](const StepInfo& st) { return st.index == s; });
                    QVERIFY2(it != w.info.steps.end(), ("step " + std::to_string(s)).c_str());
                    QVERIFY2(std::abs(it->startNs - info.steps[std::size_t(s)].startNs) <= tolerance &&
                                 std::abs(it->endNs - info.steps[std::size_t(s)].endNs) <= tolerance,
                             ("step " + std::to_string(s) + " of window " + std::to_string(first) + "-" +
                              std::to_string(last)).c_str());
                }
                for (const std::string& n : w.info.notes) { // the capture's edges only where the job's are
                    if (first > 0) QVERIFY2(!n.starts_with("the job was already running"), n.c_str());
                    if (w.toNs != std::numeric_limits<std::int64_t>::max())
                        QVERIFY2(n.find("records after the last gradient") == std::string::npos, n.c_str());
                }
                for (const Finding& f : w.info.findings)
                    QVERIFY(f.firstStep < 0 || (f.firstStep >= 0 && f.firstStep < int(info.steps.size())));
                covered += last - from + 1;
                from = last + 1;
            }
            QCOMPARE(covered, int(info.steps.size()));
            QVERIFY2(windows >= 5, std::to_string(windows).c_str());
            // Past the end: the last window, moved back to hold as many steps.
            const auto [a, b] = windowSteps(info, jobs[j], int(info.steps.size()) + 5, budget);
            QCOMPARE(b, int(info.steps.size()) - 1);
            QVERIFY(a > 0);
            // Too small a budget for the steps asked for: refused with what to do.
            try {
                analyzeJobWindow(store, capture.topology, report, jobs, j, 0, int(info.steps.size()) - 1, {}, budget);
                QFAIL("expected InputError");
            } catch (const InputError& e) {
                const std::string m = e.issue().message;
                QVERIFY2(m.find(info.id + " holds") == 0 && m.find("steps 0 to " + std::to_string(info.steps.size() - 1)) !=
                             std::string::npos && m.find("more memory") != std::string::npos,
                         m.c_str());
            }
        }
        QCOMPARE(windowedJobs, 1);
    }

    // Budgets as users write them (--memory, LLMPRISM_MEMORY): units K, M, G, T in powers of 1024, with or
    // without "iB" / "B"; anything else, or a size past 2^64, is none (0).
    void budgetsAreParsed() {
        QCOMPARE(parseSize("2000000"), std::uint64_t(2000000));
        QCOMPARE(parseSize("512M"), std::uint64_t(512) << 20);
        QCOMPARE(parseSize("8g"), std::uint64_t(8) << 30);
        QCOMPARE(parseSize("1.5GiB"), std::uint64_t(3) << 29);
        QCOMPARE(parseSize("2KB"), std::uint64_t(2048));
        QCOMPARE(parseSize("4T"), std::uint64_t(4) << 40);
        for (const char* bad : {"", "lots", "0", "-1G", "1X", "1MM", "G", "1e3", "99999999T", ".", "1.2.3M"})
            QVERIFY2(parseSize(bad) == 0, bad);
    }

    // Where no thread can be started (a process or container thread limit: pthread_create fails with EAGAIN) a
    // read goes on on the threads it has: the parallel read and the parallel stream give the file's rows, not a
    // std::terminate from a vector of joinable threads being unwound. The limit is made in a child process by a
    // seccomp filter that refuses every clone of a thread.
    void aReadAndAnAnalysisGoOnWhenNoThreadCanStart() {
        std::string csv = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        const int rows = 40000;
        for (int i = 0; i < rows; ++i)
            csv += std::to_string(1'000'000 + std::int64_t(i) * 10) + "," +
                   std::to_string(1'000'005 + std::int64_t(i) * 10) + ",10.0.0." + std::to_string(i % 50 + 1) +
                   ",10.0.1.1,1000,4791,17,100,1\n";
        const std::string file = path("no-threads.csv");
        test::writeBytes(file, csv);
        // And an analysis, whose slow links are found beside the timeline on a thread of their own when one starts.
        const Capture tiny = test::captureOf(sim::simulate(test::presetConfig("anomalies", 2)));
        const std::string expected = test::reportText(analyzeCapture(tiny));
        QVERIFY(expected.find("slow_link") != std::string::npos);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) { // no QtTest here: the exit code says what happened
            struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS), // glibc falls back to clone
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
            if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
                ::_exit(77);
            try { // the filter holds: no thread starts
                std::thread([] {}).join();
                ::_exit(78);
            } catch (const std::system_error&) {}
            try {
                LoadOptions o;
                o.threads = 4;
                o.parallelFromBytes = 1;
                LoadDiagnostics d1, d2;
                if (readFlowsCsv(file, o, d1).size() != std::size_t(rows) || !d1.errors.empty()) ::_exit(1);
                std::size_t streamed = 0;
                streamFlowsCsv(file, o, d2, 1000, [&](const FlowTable& t) { streamed += t.size(); });
                if (streamed != std::size_t(rows) || !d2.errors.empty()) ::_exit(2);
                if (test::reportText(analyzeCapture(tiny)) != expected) ::_exit(4);
            } catch (...) {
                ::_exit(3);
            }
            ::_exit(0);
        }
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY2(WIFEXITED(status), "the child was killed (std::terminate?)");
        if (WEXITSTATUS(status) == 77) QSKIP("seccomp filters are not allowed here");
        if (WEXITSTATUS(status) == 78) QSKIP("the seccomp filter did not stop std::thread here");
        QCOMPARE(WEXITSTATUS(status), 0);
    }

    // The GUI's Cancel reaches into a pass over the files (FlowStore::setInterrupt): the pass stops at its first
    // read chunk with Cancelled, before it has read the capture; lifted, the same store gives the report.
    void aPassStopsWhenInterrupted() {
        const sim::SimResult sim = sim::simulate(test::presetConfig("anomalies", 5));
        const Capture capture = test::captureOf(sim);
        const std::string dir = path("interrupted");
        sim::writeCapture(sim, dir);
        FileStore files({dir}, {});
        int polls = 0;
        files.setInterrupt([&] { return ++polls >= 1; });
        QVERIFY_THROWS_EXCEPTION(Cancelled, analyzeStore(files, files.topology(), files.hasTopology(), {}));
        QVERIFY2(files.recordsRead() < capture.flows.size(),
                 (std::to_string(files.recordsRead()) + " of " + std::to_string(capture.flows.size())).c_str());
        files.setInterrupt({});
        // The progress moves within the recognition passes (the share of the files read), not only between them.
        std::vector<double> seen;
        AnalysisOptions withProgress;
        withProgress.progress = [&](double f) {
            seen.push_back(f);
            return true;
        };
        const Report r = analyzeStore(files, files.topology(), files.hasTopology(), withProgress);
        std::vector<double> recognition;
        for (double f : seen)
            if (f > 0.0 && f < 0.4) recognition.push_back(f);
        QVERIFY(std::is_sorted(recognition.begin(), recognition.end()));
        QVERIFY2(std::set<double>(recognition.begin(), recognition.end()).size() >= 3,
                 std::to_string(recognition.size()).c_str());
        const std::string got = test::reportText(r);
        const std::string expected = test::reportText(analyzeCapture(loadCapture(dir)));
        QVERIFY2(got == expected, test::firstDifference(got, expected).c_str());
    }

    void anEmptyStoreGivesNoJobs() {
        FlowTable empty;
        TableStore store(empty, "memory");
        const Report r = analyzeStore(store, Topology{}, false);
        QVERIFY(r.jobs.empty());
        QCOMPARE(r.capture->records, std::uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestStaged)
#include "tst_staged.moc"
