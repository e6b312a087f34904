// Staged analysis (analysis/staged.h) against the whole-table analysis: the same report from a store that is
// asked for grouped rows and then one job's records at a time.
#include "analysis/staged.h"
#include "io/report_json.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <QtTest>

using namespace prism;

namespace {

// The report as JSON text, the capture's source left out (a store names itself).
std::string reportText(Report r) {
    if (r.capture) r.capture->source.clear();
    return reportToJson(r).dump(1);
}

// The first line where two texts differ, for the failure message.
std::string firstDifference(const std::string& a, const std::string& b) {
    std::istringstream x(a), y(b);
    std::string la, lb;
    for (int line = 1; bool(std::getline(x, la)) | bool(std::getline(y, lb)); ++line)
        if (la != lb) return "line " + std::to_string(line) + ": \"" + la + "\" vs \"" + lb + "\"";
    return "";
}

} // namespace

class TestStaged : public QObject {
    Q_OBJECT

    static void compareStaged(const Capture& capture, StagedStats* stats = nullptr) {
        const Report whole = analyzeCapture(capture);
        TableStore store(capture.flows, "memory", capture.diagnostics);
        const Report staged = analyzeStore(store, capture.topology, capture.hasTopology, {}, stats);
        QCOMPARE(staged.capture->source, std::string("memory"));
        const std::string a = reportText(whole), b = reportText(staged);
        QVERIFY2(a == b, firstDifference(a, b).c_str());
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
        compareStaged(loadCapture(path.toStdString()));
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
