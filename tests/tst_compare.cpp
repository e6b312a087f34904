// Comparing two runs (issue 17): simulated pairs — a clean run against the same job with a slowed rank, a slow
// link, a longer DP sync, another shape — must name the right main difference, and two clean runs of different
// seeds none; the llmprism-compare JSON field by field; llmprism-cli compare end to end (exit codes, errors).
#include "analysis/compare.h"
#include "test_util.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace prism;
using prism::test::contains;

namespace {

// One simulated run analysed as the CLI and the GUI do it (runAnalysis keeps the per-rank timelines).
struct SimRun {
    sim::SimResult sim;
    Capture capture;
    Analysis analysis;
    RunData data() const { return {capture.source, &capture, &analysis}; }
    const Finding& anomaly() const { return sim.truth.jobs.at(0).anomalies.at(0); }
};

// A preset without its own anomalies, changed by `settings` (simulate --set) and given `anomalies`
// (simulate --anomaly); "ALL" in an anomaly stands for every step after the first.
std::shared_ptr<SimRun> simRun(const char* preset, int seed, std::vector<std::string> anomalies = {},
                               const std::vector<std::string>& settings = {}) {
    sim::SimConfig config = test::presetConfig(preset, seed);
    config.anomalies.clear();
    for (const std::string& s : settings) sim::applySetting(s, config);
    int index = 0;
    for (std::string& a : anomalies) {
        const auto all = a.find("ALL");
        if (all != std::string::npos) a.replace(all, 3, "1-" + std::to_string(config.jobs.at(0).steps - 1));
        config.anomalies.push_back(sim::parseAnomaly(a, config, std::uint64_t(seed), index++));
    }
    auto run = std::make_shared<SimRun>();
    run->sim = sim::simulate(config);
    run->capture = test::captureOf(run->sim);
    run->capture.source = std::string(preset) + "-" + std::to_string(seed);
    run->analysis = runAnalysis(run->capture);
    return run;
}

const JobComparison& onlyJob(const Comparison& c) {
    if (c.jobs.empty()) throw std::runtime_error("no job pair");
    return c.jobs.front();
}

// A clean run of `preset` (seed 11) against one with `anomaly` (seed 12) and their comparison.
struct Pair {
    std::shared_ptr<SimRun> a, b;
    Comparison c;
    const JobComparison& job() const { return onlyJob(c); }
};

Pair pairWith(const QString& preset, const std::string& anomaly) {
    Pair p;
    p.a = simRun(preset.toUtf8().constData(), 11);
    p.b = simRun(preset.toUtf8().constData(), 12, {anomaly});
    p.c = compareRuns(p.a->data(), p.b->data());
    return p;
}

bool inList(const std::vector<std::string>& list, const std::string& x) {
    return std::find(list.begin(), list.end(), x) != list.end();
}

// The order the contract promises: largest |delta| first among the causes; each effect after the cause it names.
void checkOrder(const JobComparison& j) {
    bool effects = false;
    for (std::size_t i = 0; i < j.differences.size(); ++i) {
        const Difference& d = j.differences[i];
        QVERIFY2(!d.message.empty(), d.what.c_str());
        if (d.effectOf >= 0) {
            effects = true;
            QVERIFY(std::size_t(d.effectOf) < i);
            continue;
        }
        QVERIFY2(!effects, "a cause after an effect");
        if (i > 0 && j.differences[i - 1].what != "shape")
            QVERIFY(std::fabs(j.differences[i - 1].deltaMsPerStep) >= std::fabs(d.deltaMsPerStep) - 1e-9);
    }
}

using Cli = test::CliRun;
const auto cli = test::runCli;

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

} // namespace

class TestCompare : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // Two clean runs of one job (different seeds: other jitter, other placement of the ranks on the hosts) give no
    // difference, with room to spare: every change left out is under half its threshold.
    void cleanPairsGiveNoDifference_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seedA");
        QTest::addColumn<int>("seedB");
        QTest::newRow("tiny 1-2") << "tiny" << 1 << 2;
        QTest::newRow("tiny 11-13") << "tiny" << 11 << 13;
        QTest::newRow("anomalies 3-4") << "anomalies" << 3 << 4;
        QTest::newRow("pure-pp 5-6") << "pure-pp" << 5 << 6;
        QTest::newRow("pure-dp 7-8") << "pure-dp" << 7 << 8;
        QTest::newRow("zero1 9-10") << "zero1" << 9 << 10;
        QTest::newRow("megatron-8 1-2") << "megatron-8" << 1 << 2;
        QTest::newRow("two-jobs 11-12") << "two-jobs" << 11 << 12;
    }
    void cleanPairsGiveNoDifference() {
        QFETCH(QString, preset);
        QFETCH(int, seedA);
        QFETCH(int, seedB);
        const auto a = simRun(preset.toUtf8().constData(), seedA), b = simRun(preset.toUtf8().constData(), seedB);
        const Comparison c = compareRuns(a->data(), b->data());
        QCOMPARE(c.jobs.size(), b->analysis.report.jobs.size());
        QVERIFY(c.unmatchedA.empty() && c.unmatchedB.empty());
        for (const JobComparison& j : c.jobs) {
            QVERIFY2(j.differences.empty(), j.differences.empty() ? "" : (j.b + ": " + j.differences.front().message).c_str());
            QVERIFY(j.sameShape);
            QVERIFY(j.matchedBy == "gpus" || j.matchedBy == "shape");
            QVERIFY2(j.residual < 0.5, std::to_string(j.residual).c_str());
            QVERIFY2(j.linkResidual < 1.15, std::to_string(j.linkResidual).c_str());
            QVERIFY(std::fabs(j.medianStepMsB - j.medianStepMsA) < 0.02 * j.medianStepMsA);
            QVERIFY(!j.ranks.empty());
        }
    }

    // A slowed GPU (its whole TP group computes longer in every step): the main difference is compute, on that TP
    // group, the size of what the step grew by; the others' waiting follows from it.
    void slowedRankIsTheMainReason_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<double>("factor");
        QTest::newRow("tiny 1.5") << "tiny" << 1.5;
        QTest::newRow("tiny 1.1") << "tiny" << 1.1;
        QTest::newRow("anomalies 1.3") << "anomalies" << 1.3;
        QTest::newRow("zero1 1.3") << "zero1" << 1.3;
        QTest::newRow("pure-pp 1.3") << "pure-pp" << 1.3;
        QTest::newRow("megatron-8 1.3") << "megatron-8" << 1.3;
    }
    void slowedRankIsTheMainReason() {
        QFETCH(QString, preset);
        QFETCH(double, factor);
        const Pair pair = pairWith(preset, "slow_rank:steps=ALL,factor=" + std::to_string(factor));
        const auto &a = pair.a, &b = pair.b;
        const Finding& truth = b->anomaly();
        const JobComparison& j = pair.job();
        checkOrder(j);
        QVERIFY(!j.differences.empty());
        const Difference& top = j.differences.front();
        QCOMPARE(top.what, std::string("compute"));
        QVERIFY2(inList(truth.group, top.where.ip), top.message.c_str());
        for (const std::string& ip : top.where.ips) QVERIFY2(inList(truth.group, ip), ip.c_str());
        QVERIFY(!top.where.host.empty() && top.where.stage >= 0);
        QVERIFY(top.deltaMsPerStep > 0);
        // What the step grew by, within a third: the GPU's extra compute is on the critical path.
        const double grown = j.medianStepMsB - j.medianStepMsA;
        QVERIFY2(top.deltaMsPerStep > 0.66 * grown && top.deltaMsPerStep < 1.5 * grown, top.message.c_str());
        // Nothing of the kind anywhere else; the waiting that grew is explained by it.
        for (std::size_t i = 1; i < j.differences.size(); ++i) {
            const Difference& d = j.differences[i];
            QVERIFY2(d.what != "compute" || d.deltaMsPerStep < 0.2 * top.deltaMsPerStep, d.message.c_str());
            QVERIFY2(d.what != "link", d.message.c_str());
            if (d.what == "waiting" && d.deltaMsPerStep > 0) QCOMPARE(d.effectOf, 0);
        }
        // The other way round (A slowed, B clean): the same place, faster.
        const Comparison backAll = compareRuns(b->data(), a->data());
        const JobComparison& back = onlyJob(backAll);
        QVERIFY(!back.differences.empty());
        QCOMPARE(back.differences.front().what, std::string("compute"));
        QVERIFY(back.differences.front().deltaMsPerStep < 0);
    }

    // A NIC link at a third of its bandwidth: the main difference is that link — the NIC and its leaf — its
    // transfers slower by about the factor; the PP and DP transfers it stretched follow from it.
    void slowLinkIsTheMainReason_data() {
        QTest::addColumn<QString>("preset");
        QTest::newRow("tiny") << "tiny";
        QTest::newRow("anomalies") << "anomalies";
        QTest::newRow("zero1") << "zero1";
        QTest::newRow("pure-pp") << "pure-pp";
        QTest::newRow("megatron-8") << "megatron-8";
    }
    void slowLinkIsTheMainReason() {
        QFETCH(QString, preset);
        const Pair pair = pairWith(preset, "slow_link:steps=ALL,factor=3");
        const Finding& truth = pair.b->anomaly();
        const JobComparison& j = pair.job();
        checkOrder(j);
        QVERIFY(!j.differences.empty());
        const Difference& top = j.differences.front();
        QCOMPARE(top.what, std::string("link"));
        QCOMPARE(top.where.ip, truth.ip);
        QCOMPARE(top.where.switchName, truth.switchName);
        QVERIFY2(top.slowdown > 2.2 && top.slowdown < 3.5, top.message.c_str());
        QVERIFY(top.bGbps < top.aGbps / 2 && top.deltaMsPerStep > 0);
        for (const Difference& d : j.differences) {
            QVERIFY2(d.what != "compute", d.message.c_str());
            if (d.what == "pp" || d.what == "dp_sync") QVERIFY2(d.effectOf >= 0, d.message.c_str());
        }
    }

    // Short anomalies are named with their steps, not only averaged over the run (issue 42): a 300 ms pause
    // before step 12 is the main difference, in step 12, about 300 ms there; a NIC link at a quarter of its
    // bandwidth in steps 16-20 is a [link] entry at that NIC with those steps (its median over the run unchanged).
    // In JSON: first_step, last_step, range_delta_ms_per_step. Clean pairs give none (cleanPairsGiveNoDifference).
    void aShortAnomalyIsNamedWithItsSteps() {
        const Pair pause = pairWith("anomalies", "slow_step:steps=12,pause_ms=300");
        checkOrder(pause.job());
        QVERIFY(!pause.job().differences.empty());
        const Difference& top = pause.job().differences.front();
        QVERIFY2(top.firstStep == 12 && top.lastStep == 12, top.message.c_str());
        QVERIFY2(top.rangeDeltaMs > 250 && top.rangeDeltaMs < 350, top.message.c_str());
        QVERIFY2(contains(top.message, "in step 12"), top.message.c_str());
        const QJsonObject json =
            QJsonDocument::fromJson(QByteArray::fromStdString(comparisonToJson(pause.c).dump())).object();
        const QJsonObject first = json["jobs"].toArray()[0].toObject()["differences"].toArray()[0].toObject();
        QCOMPARE(first["first_step"].toInt(), 12);
        QCOMPARE(first["last_step"].toInt(), 12);
        QVERIFY(first["range_delta_ms_per_step"].toDouble() > 250);

        const Pair link = pairWith("anomalies", "slow_link:host=node-0002,gpu=3,steps=16-20,factor=4");
        const Finding& truth = link.b->anomaly();
        checkOrder(link.job());
        QVERIFY(!link.job().differences.empty());
        const Difference& l = link.job().differences.front();
        QCOMPARE(l.what, std::string("link"));
        QCOMPARE(l.where.ip, truth.ip);
        QVERIFY2(l.firstStep >= 15 && l.firstStep <= 16 && l.lastStep >= 20 && l.lastStep <= 21, l.message.c_str());
        QVERIFY2(l.slowdown > 2.5, l.message.c_str());
        QVERIFY2(contains(l.message, "in steps"), l.message.c_str());
    }

    // Each DP group all-reduces twice the bytes: DP sync longer on every rank, said once for the whole job.
    void longerDpSyncIsJobWide() {
        const auto a = simRun("tiny", 11);
        const auto b = simRun("tiny", 12, {}, {"gradient_mib=64"});
        const Comparison jAll = compareRuns(a->data(), b->data());
        const JobComparison& j = onlyJob(jAll);
        checkOrder(j);
        QCOMPARE(j.differences.size(), std::size_t(1));
        const Difference& d = j.differences.front();
        QCOMPARE(d.what, std::string("dp_sync"));
        QVERIFY(d.where.ip.empty() && d.where.stage < 0);
        QCOMPARE(d.where.ranks, int(b->analysis.jobs[0].timeline.ranks.size()));
        QVERIFY2(d.bMs > 1.7 * d.aMs && d.bMs < 2.3 * d.aMs, d.message.c_str());
        QVERIFY(j.breakdownB.dpSync > 1.7 * j.breakdownA.dpSync);
    }

    // The same GPUs in another shape: said as such first, the ranks not compared one by one, and no link blamed.
    void differentShapeIsSaid() {
        const auto a = simRun("tiny", 11);
        const auto b = simRun("tiny", 12, {}, {"pp=4,dp=1"});
        const Comparison jAll = compareRuns(a->data(), b->data());
        const JobComparison& j = onlyJob(jAll);
        QCOMPARE(j.matchedBy, std::string("gpus"));
        QVERIFY(!j.sameShape);
        QCOMPARE(j.shapeA, std::string("TP 8 × PP 2 × DP 2 (32 GPUs)"));
        QCOMPARE(j.shapeB, std::string("TP 8 × PP 4 × DP 1 (32 GPUs)"));
        QVERIFY(!j.differences.empty());
        QCOMPARE(j.differences.front().what, std::string("shape"));
        QVERIFY(contains(j.differences.front().message, "shape changed"));
        QVERIFY(j.ranks.empty());
        for (const Difference& d : j.differences) QVERIFY2(d.where.ip.empty() && d.what != "link", d.message.c_str());
    }

    // Jobs pair by GPUs in the same shape, else by shape (a job moved to other hosts), else by GPUs; what is left
    // is listed. --job-a / --job-b (compareJobs) take any pair.
    void jobsAreMatched() {
        const auto a = simRun("two-jobs", 11), b = simRun("two-jobs", 12);
        const Comparison c = compareRuns(a->data(), b->data());
        QCOMPARE(c.jobs.size(), std::size_t(2));
        for (const JobComparison& j : c.jobs) {
            QVERIFY(j.sameShape);
            QCOMPARE(a->analysis.report.jobs[std::size_t(j.jobA)].pp, b->analysis.report.jobs[std::size_t(j.jobB)].pp);
        }
        const auto tiny = simRun("tiny", 1);
        const Comparison partial = compareRuns(a->data(), tiny->data());
        QCOMPARE(partial.jobs.size(), std::size_t(1));
        QCOMPARE(partial.jobs[0].matchedBy, std::string("shape"));
        QCOMPARE(partial.unmatchedA.size(), std::size_t(1));
        QVERIFY(partial.unmatchedB.empty());
        const int other = jobIndexById(a->analysis.report, partial.unmatchedA[0]);
        QVERIFY(other >= 0);
        const JobComparison chosen = compareJobs(a->data(), other, tiny->data(), 0);
        QCOMPARE(chosen.matchedBy, std::string("chosen"));
        QVERIFY(!chosen.sameShape);
        QCOMPARE(jobIndexById(a->analysis.report, "job-9"), -1);
    }

    // The JSON, field by field, against the comparison it was made from.
    void jsonFieldByField() {
        const auto a = simRun("tiny", 11);
        const auto b = simRun("tiny", 12, {"slow_rank:steps=ALL,factor=1.5"});
        const Comparison c = compareRuns(a->data(), b->data());
        const nlohmann::json j = comparisonToJson(c);
        QCOMPARE(j.at("format").get<std::string>(), std::string("llmprism-compare"));
        QCOMPARE(j.at("version").get<int>(), 1);
        QCOMPARE(j.at("a").at("source").get<std::string>(), std::string("tiny-11"));
        QCOMPARE(j.at("b").at("source").get<std::string>(), std::string("tiny-12"));
        QCOMPARE(j.at("jobs").size(), std::size_t(1));
        const auto& job = j.at("jobs")[0];
        const JobComparison& jc = c.jobs[0];
        QCOMPARE(job.at("a").get<std::string>(), std::string("job-0"));
        QCOMPARE(job.at("b").get<std::string>(), std::string("job-0"));
        QCOMPARE(job.at("median_step_ms").at("a").get<double>(), std::round(jc.medianStepMsA * 1000) / 1000);
        QCOMPARE(job.at("median_step_ms").at("b").get<double>(), std::round(jc.medianStepMsB * 1000) / 1000);
        for (const char* side : {"a", "b"}) {
            const auto& bd = job.at("breakdown_ms").at(side);
            QCOMPARE(bd.size(), std::size_t(4));
            for (const char* k : {"compute", "pp", "dp_sync", "waiting"}) QVERIFY(bd.at(k).get<double>() >= 0);
        }
        QCOMPARE(job.at("breakdown_ms").at("b").at("waiting").get<double>(),
                 std::round(jc.breakdownB.waiting * 1000) / 1000);
        QCOMPARE(job.at("matched_by").get<std::string>(), std::string("gpus"));
        QCOMPARE(job.at("gpu_overlap").get<double>(), 1.0);
        QCOMPARE(job.at("steps").at("a").get<int>(), 20);
        const auto& diffs = job.at("differences");
        QCOMPARE(diffs.size(), jc.differences.size());
        for (std::size_t i = 0; i < diffs.size(); ++i) {
            const auto& d = diffs[i];
            const Difference& x = jc.differences[i];
            QCOMPARE(d.at("what").get<std::string>(), x.what);
            QCOMPARE(d.at("delta_ms_per_step").get<double>(), std::round(x.deltaMsPerStep * 1000) / 1000);
            QCOMPARE(d.at("message").get<std::string>(), x.message);
            QCOMPARE(d.contains("effect_of"), x.effectOf >= 0);
            QVERIFY(d.at("where").is_object());
            if (!x.where.ip.empty()) {
                QCOMPARE(d.at("where").at("ip").get<std::string>(), x.where.ip);
                QCOMPARE(d.at("where").at("host").get<std::string>(), x.where.host);
                QCOMPARE(d.at("where").at("stage").get<int>(), x.where.stage);
            }
        }
        const auto& top = diffs[0];
        QCOMPARE(top.at("what").get<std::string>(), std::string("compute"));
        QVERIFY(inList(b->anomaly().group, top.at("where").at("ip").get<std::string>()));
        QVERIFY(top.at("where").at("ips").size() >= 1);
        QVERIFY(top.at("delta_ms_per_step").get<double>() > 5);
        QVERIFY(j.at("unmatched").at("a").empty() && j.at("unmatched").at("b").empty());
        // The summary says the same.
        const std::string text = comparisonToText(c);
        QVERIFY(contains(text, "job-0 (A) ↔ job-0 (B)"));
        QVERIFY(contains(text, "1. [compute]"));
    }

    // llmprism-cli compare on captures and sessions: the summary, the JSON file, and errors naming the file.
    void cliEndToEnd() {
        const QString clean = m_dir.filePath("clean"), slow = m_dir.filePath("slow-link"), json = m_dir.filePath("c.json");
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--seed", "3", "--out", clean}).code, 0);
        QCOMPARE(cli({"simulate", "--preset", "tiny", "--seed", "4", "--out", slow, "--anomaly",
                      "slow_link:host=node-0002,gpu=5,steps=1-19,factor=4"})
                     .code,
                 0);
        Cli r = cli({"compare", clean, slow, "--json", json});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("1. [link]") && r.out.contains("node-0002:5"), qPrintable(r.out));
        QJsonObject o = readJson(json);
        QCOMPARE(o["format"].toString(), QString("llmprism-compare"));
        QCOMPARE(o["version"].toInt(), 1);
        QCOMPARE(o["a"].toObject()["source"].toString(), clean);
        QCOMPARE(o["b"].toObject()["source"].toString(), slow);
        const QJsonObject job = o["jobs"].toArray()[0].toObject();
        QVERIFY(job["median_step_ms"].toObject()["b"].toDouble() > job["median_step_ms"].toObject()["a"].toDouble());
        const QJsonObject top = job["differences"].toArray()[0].toObject();
        QCOMPARE(top["what"].toString(), QString("link"));
        QCOMPARE(top["where"].toObject()["ip"].toString(), QString("10.5.0.2"));
        QCOMPARE(top["where"].toObject()["host"].toString(), QString("node-0002"));
        QCOMPARE(top["where"].toObject()["switch"].toString(), QString("leaf-g0-r5"));
        QVERIFY(top["slowdown"].toDouble() > 3 && top["delta_ms_per_step"].toDouble() > 0);

        // A session compares as its capture does.
        const QString session = m_dir.filePath("slow.prism"), json2 = m_dir.filePath("c2.json");
        QCOMPARE(cli({"import", slow, "--out", session, "--quiet"}).code, 0);
        r = cli({"compare", clean, session, "--json", json2, "--quiet"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.isEmpty());
        QJsonObject o2 = readJson(json2);
        QCOMPARE(o2["b"].toObject()["source"].toString(), session);
        QCOMPARE(o2["jobs"], o["jobs"]);

        // A pair chosen by id; one id alone takes its partner.
        r = cli({"compare", clean, session, "--job-a", "job-0", "--job-b", "job-0", "--quiet", "--json", json2});
        QCOMPARE(r.code, 0);
        QCOMPARE(readJson(json2)["jobs"].toArray()[0].toObject()["matched_by"].toString(), QString("chosen"));
        QCOMPARE(cli({"compare", clean, session, "--job-b", "job-0", "--quiet"}).code, 0);

        // Errors: bad input names the file (exit 1), a bad command line says what is wrong (exit 2).
        const QString missing = m_dir.filePath("nowhere");
        r = cli({"compare", clean, missing});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(missing) && r.err.contains("no such file"), qPrintable(r.err));
        const QString text = m_dir.filePath("notes.txt");
        test::writeBytes(text.toStdString(), "not a capture\n");
        r = cli({"compare", text, clean});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(text) && r.err.contains("not flow data"), qPrintable(r.err));
        const QString fake = m_dir.filePath("fake.prism");
        test::writeBytes(fake.toStdString(), "SQLite format 3 but not really\n");
        r = cli({"compare", clean, fake});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(fake), qPrintable(r.err));
        r = cli({"compare", clean, slow, "--job-a", "job-7"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--job-a: " + clean + " has no job \"job-7\" (its jobs: job-0)"), qPrintable(r.err));
        r = cli({"compare", clean});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("expected a B"), qPrintable(r.err));
        r = cli({"compare", clean, slow, "--bogus"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("unknown option --bogus"));
        QVERIFY(!QFile::exists(m_dir.filePath("never.json")));
        r = cli({"compare", "--help"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("Usage: llmprism-cli compare A B [--job-a ID]"));
    }

    // simulate --set: a knob of the job, checked like --anomaly.
    void simulateSettings() {
        sim::SimConfig c = test::presetConfig("tiny", 1);
        sim::applySetting("gradient_mib=64,micro_batches=6,forward_ms=2.5", c);
        QCOMPARE(c.jobs[0].gradientBytes, std::uint64_t(64) << 20);
        QCOMPARE(c.jobs[0].microBatches, 6);
        QCOMPARE(c.jobs[0].forwardNs, std::int64_t(2'500'000));
        sim::applySetting("job=job-a,pp=4,dp=1", c);
        QCOMPARE(c.jobs[0].pp, 4);
        sim::validate(c);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sim::applySetting("colour=red", c));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sim::applySetting("pp=1.5", c));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sim::applySetting("job=3,pp=2", c));
        sim::applySetting("pp=5", c); // 40 GPUs on 4 hosts of 8: validate says so
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sim::validate(c));
        const Cli r = cli({"simulate", "--preset", "tiny", "--out", m_dir.filePath("bad"), "--set", "colour=red"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("setting \"colour=red\": unknown key \"colour\""));
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "tst_compare.moc"
