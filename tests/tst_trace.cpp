// Real training traces through the simulator (simulate --from-trace, sim/trace_import.h): the recorded jobs of
// tests/data/megatron-trace come out as their meta says, with the truth their own timings show and what fixing it
// saves against the source's decomposition; the engine finds their shape, steps and root cause, with its cost;
// malformed traces and metas are refused with the file, the place and what was expected.
#include "test_util.h"

#include "analysis/evaluate.h"
#include "analysis/pipeline.h"
#include "model/diagnostics.h"
#include "sim/simulator.h"
#include "sim/trace_import.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

using namespace prism;
using namespace prism::test;

namespace {

const std::string kData = std::string(LLMPRISM_TEST_DATA) + "/megatron-trace/";

// The source's what-if (result-X.json): the share of the job's time worker group `key` of `by` costs,
// (S_w - 1) / S.
double sourceShare(const std::string& trial, const std::string& by, const std::string& key) {
    std::ifstream in(kData + "result-" + trial + ".json");
    const nlohmann::json r = nlohmann::json::parse(in);
    const double s = r["blocking_slowdown"].get<double>();
    return (r["blocking_decompose_by_" + by][key].get<double>() - 1.0) / s;
}

struct Replay {
    sim::SimResult sim;
    Report report;
};

Replay replay(const std::string& trial) {
    sim::TraceOptions options;
    const sim::TraceImport imported = sim::importTrace(kData + "timeline-" + trial + ".json.gz", options);
    Replay r{sim::simulate(imported.config), {}};
    r.report = analyzeCapture(captureOf(r.sim));
    return r;
}

std::string writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    writeBytes(path, text);
    return path;
}

// The error importTrace throws for `trace` (and `meta`), as "file:line:column: message".
std::string importError(const std::string& trace, const std::string& meta = "") {
    sim::TraceOptions options;
    options.metaPath = meta;
    options.whatIf = false;
    try {
        sim::importTrace(trace, options);
    } catch (const InputError& e) {
        return e.issue().toString();
    }
    return "(no error)";
}

// A small valid trace: DP 2 x PP 2, `mbs` micro-batches, `steps` steps, 10 ms forwards and 20 ms backwards.
std::string smallTrace(int steps = 3, int mbs = 4) {
    nlohmann::json ev = nlohmann::json::array();
    for (int d = 0; d < 2; ++d) {
        ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"args", {{"name", "DP rank [" + std::to_string(d) + "]"}}}});
        for (int p = 0; p < 2; ++p)
            ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", d}, {"tid", p},
                          {"args", {{"name", "PP rank " + std::to_string(p) + ", TP rank 0, compute"}}}});
    }
    double ts = 0;
    for (int s = 0; s < steps; ++s)
        for (int d = 0; d < 2; ++d)
            for (int p = 0; p < 2; ++p)
                for (int mb = 0; mb < mbs; ++mb)
                    for (const char* name : {"forward-compute", "backward-compute"}) {
                        const double dur = name[0] == 'f' ? 10'000.0 : 20'000.0;
                        ev.push_back({{"ph", "X"}, {"name", name}, {"pid", d}, {"tid", p}, {"ts", ts}, {"dur", dur},
                                      {"args", {{"step", 100 + s}, {"mb_id", mb}, {"model_chunk", 0}}}});
                        ts += dur;
                    }
    return ev.dump();
}

} // namespace

class TestTrace : public QObject {
    Q_OBJECT

private slots:
    void theArTraceIsTheJobItsMetaDescribes() {
        sim::TraceOptions options;
        options.whatIf = false;
        const sim::TraceImport t = sim::importTrace(kData + "timeline-AR.json.gz", options);
        QCOMPARE(t.config.jobs.size(), std::size_t(1));
        const sim::JobSpec& j = t.config.jobs[0];
        QCOMPARE(j.tp, 4);
        QCOMPARE(j.pp, 4);
        QCOMPARE(j.dp, 4);
        QCOMPARE(j.microBatches, 32);
        QCOMPARE(j.steps, 44);
        QVERIFY(j.distributedOptimizer);
        QVERIFY(j.tiedEmbedding);
        QCOMPARE(t.config.hosts, 16); // a TP group a host
        QCOMPARE(j.stageGradientBytes.size(), std::size_t(4));
        // The recorded times: DP rank 0's stage 0 computes about 2.3x its peers (546 ms forwards against 218).
        const std::int64_t slow = j.recorded->work(0, 0, 0), peer = j.recorded->work(0, 1, 0);
        QVERIFY2(double(slow) > 2.0 * double(peer), qPrintable(QString::number(double(slow) / double(peer))));
    }

    void theArTruthIsTheSlowedWorkerWithTheSourcesCost() {
        const sim::TraceImport t = sim::importTrace(kData + "timeline-AR.json.gz", {});
        QCOMPARE(t.config.anomalies.size(), std::size_t(1));
        const sim::AnomalySpec& a = t.config.anomalies[0];
        QCOMPARE(a.kind, std::string("slow_rank"));
        QVERIFY(a.recorded);
        QCOMPARE(a.host, 0); // DP rank 0, stage 0: ranks 0-3, the first host
        QCOMPARE(a.firstStep, 0);
        QCOMPARE(a.lastStep, 43);
        const double reference = sourceShare("AR", "dp_rank", "0");
        QVERIFY2(std::abs(a.savesShare - reference) <= 0.1 * reference,
                 qPrintable(QString("what-if %1 against the source's %2").arg(a.savesShare).arg(reference)));
    }

    void theArJobIsFoundWholeWithItsSlowWorkerAndItsCost() {
        const Replay r = replay("AR");
        const EvaluationResult e = evaluate(r.report, r.sim.truth);
        QCOMPARE(e.jobs.size(), std::size_t(1));
        const JobScore& s = e.jobs[0];
        QVERIFY(s.tp.exact && s.pp.exact && s.dp.exact);
        QVERIFY2(s.steps.exact(), qPrintable(QString("%1 of %2 steps, %3 spurious")
                                                 .arg(s.steps.matched)
                                                 .arg(s.steps.truthSteps)
                                                 .arg(s.steps.spurious())));
        QVERIFY(s.findings.exact());
        const Finding& top = r.report.jobs[0].findings.front();
        QCOMPARE(top.kind, std::string("slow_rank"));
        QCOMPARE(top.ip, r.sim.truth.jobs[0].anomalies[0].ip);
        const double reference = sourceShare("AR", "dp_rank", "0");
        QVERIFY2(std::abs(top.savesShare - reference) <= 0.1 * reference,
                 qPrintable(QString("finding %1 against the source's %2").arg(top.savesShare).arg(reference)));
        QVERIFY(contains(top.message, "fixing it would save about"));
    }

    void theSeJobIsFoundWhole() {
        const Replay r = replay("SE");
        const EvaluationResult e = evaluate(r.report, r.sim.truth);
        QCOMPARE(e.jobs.size(), std::size_t(1));
        const JobScore& s = e.jobs[0];
        QCOMPARE(s.tp.truth, 2); // TP 1 x context parallel 2, inside the host
        QVERIFY(s.tp.exact && s.pp.exact && s.dp.exact);
        QVERIFY(s.steps.exact());
    }

    // The SE job's replicas get micro-batches of uneven length: its DP groups wait at every sync for a different
    // one. The truth measures those waits in the replay; the engine finds them from the flows as dp_imbalance, with
    // a cost near the measured one, next to its slow last stage.
    void theSeJobWaitsForUnevenWorkAndItsLastStage() {
        const Replay r = replay("SE");
        const auto& truth = r.sim.truth.jobs[0].anomalies;
        const auto t = std::find_if(truth.begin(), truth.end(), [](const Finding& a) { return a.kind == "dp_imbalance"; });
        QVERIFY(t != truth.end());
        const auto& found = r.report.jobs[0].findings;
        const auto f = std::find_if(found.begin(), found.end(), [](const Finding& a) { return a.kind == "dp_imbalance"; });
        QVERIFY(f != found.end());
        QVERIFY2(std::abs(f->savesShare - t->savesShare) <= 0.3 * t->savesShare,
                 qPrintable(QString("found %1, replay %2").arg(f->savesShare).arg(t->savesShare)));
        QVERIFY(std::any_of(found.begin(), found.end(), [&](const Finding& a) {
            return a.kind == "slow_stage" && a.stage == r.report.jobs[0].pp - 1;
        }));
    }

    void theMetaIsFoundNextToTheTrace() {
        QCOMPARE(sim::siblingMetaPath(kData + "timeline-AR.json.gz"), kData + "meta-AR.yaml");
        QCOMPARE(sim::siblingMetaPath(kData + "README.md"), std::string());
    }

    void withoutAMetaTheShapeIsReadOffTheTrace() {
        QTemporaryDir dir;
        const std::string trace = writeFile(dir, "t.json", smallTrace());
        sim::TraceOptions options;
        options.whatIf = false;
        const sim::TraceImport t = sim::importTrace(trace, options);
        const sim::JobSpec& j = t.config.jobs[0];
        QCOMPARE(std::tuple(j.tp, j.pp, j.dp, j.microBatches, j.steps), std::tuple(1, 2, 2, 4, 3));
        QVERIFY(!j.distributedOptimizer); // no DP collectives in the trace: a plain all-reduce of a default size
        QCOMPARE(t.config.hosts, 4);
        // It simulates: four steps' worth of flows, three steps in the truth.
        const sim::SimResult r = sim::simulate(t.config);
        QCOMPARE(r.truth.jobs[0].steps.size(), std::size_t(3));
    }

    void malformedTracesAreRefusedWithTheirPlace() {
        QTemporaryDir dir;
        QVERIFY(contains(importError(writeFile(dir, "a.json", "[{\"ph\": \"X\",")), "a.json:1:"));
        QVERIFY(contains(importError(writeFile(dir, "b.json", "{\"other\": 1}")), "traceEvents"));
        QVERIFY(contains(importError(writeFile(dir, "c.json", "[]")), "no complete events"));
        // An event whose thread has no "PP rank" name.
        const std::string noLane = R"([{"ph":"X","name":"forward-compute","pid":0,"tid":7,"ts":0,"dur":1,"args":{"step":1,"mb_id":0}}])";
        const std::string e1 = importError(writeFile(dir, "d.json", noLane));
        QVERIFY2(contains(e1, "d.json") && contains(e1, "traceEvents[0]") && contains(e1, "PP rank"), e1.c_str());
        // Without args.step; a compute event without mb_id.
        const std::string lane = R"({"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"PP rank 0, TP rank 0, compute"}},)";
        const std::string e2 = importError(writeFile(
            dir, "e.json", "[" + lane + R"({"ph":"X","name":"forward-compute","pid":0,"tid":0,"ts":0,"dur":1,"args":{}}])"));
        QVERIFY2(contains(e2, "traceEvents[1]") && contains(e2, "args.step"), e2.c_str());
        const std::string e3 = importError(writeFile(
            dir, "f.json", "[" + lane + R"({"ph":"X","name":"forward-compute","pid":0,"tid":0,"ts":0,"dur":1,"args":{"step":3}}])"));
        QVERIFY2(contains(e3, "mb_id"), e3.c_str());
        const std::string e4 = importError(writeFile(
            dir, "g.json", "[" + lane + R"({"ph":"X","name":"forward-compute","pid":0,"tid":0,"ts":"soon","dur":1,"args":{"step":3,"mb_id":0}}])"));
        QVERIFY2(contains(e4, "\"ts\""), e4.c_str());
        QVERIFY(contains(importError(dir.filePath("missing.json").toStdString()), "missing.json"));
    }

    void aMissingOpTakesItsPeersTimeAndANoteSaysSo() {
        QTemporaryDir dir;
        nlohmann::json ev = nlohmann::json::parse(smallTrace());
        for (std::size_t i = 0; i < ev.size(); ++i)
            if (ev[i]["ph"] == "X" && ev[i]["pid"] == 1 && ev[i]["args"]["mb_id"] == 2) {
                ev.erase(ev.begin() + std::ptrdiff_t(i));
                break;
            }
        sim::TraceOptions options;
        options.whatIf = false;
        const sim::TraceImport t = sim::importTrace(writeFile(dir, "t.json", ev.dump()), options);
        QVERIFY(std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) { return contains(n, "1 forward/backward ops missing"); }));
    }

    void badMetasAreRefusedWithTheirLine() {
        QTemporaryDir dir;
        const std::string trace = writeFile(dir, "t.json", smallTrace());
        const std::string bad = writeFile(dir, "m.yaml", "trial_name: X\ndp_size: two\n");
        const std::string e1 = importError(trace, bad);
        QVERIFY2(contains(e1, "m.yaml:2") && contains(e1, "dp_size"), e1.c_str());
        const std::string small = writeFile(dir, "n.yaml", "dp_size: 1\npp_size: 2\ntp_size: 1\n");
        QVERIFY(contains(importError(trace, small), "more than the meta's dp_size 1"));
        const std::string world = writeFile(dir, "w.yaml", "dp_size: 2\npp_size: 2\ntp_size: 1\nworld_size: 8\n");
        QVERIFY(contains(importError(trace, world), "world_size 8"));
    }

    void theCliWritesATraceCapture() {
        QTemporaryDir dir;
        const QString out = dir.filePath("cap");
        const CliRun run = runCli({"simulate", "--from-trace", QString::fromStdString(kData + "timeline-AR.json.gz"),
                                   "--out", out, "--gpus-per-host", "8"});
        QVERIFY2(run.code == 0, qPrintable(run.err));
        QVERIFY(run.out.contains("recorded job AR: TP 4 x PP 4 x DP 4"));
        QVERIFY(QFile::exists(out + "/truth.json") && QFile::exists(out + "/flows.csv"));
        const CliRun both = runCli({"simulate", "--from-trace", "x.json", "--preset", "tiny", "--out", out});
        QCOMPARE(both.code, 2);
        QVERIFY(both.err.contains("exclude each other"));
        const CliRun neither = runCli({"simulate", "--out", out});
        QCOMPARE(neither.code, 2);
        const CliRun host = runCli({"simulate", "--from-trace", QString::fromStdString(kData + "timeline-AR.json.gz"),
                                    "--out", out, "--gpus-per-host", "3"});
        QCOMPARE(host.code, 2);
        QVERIFY(host.err.contains("--gpus-per-host 3"));
    }
};

QTEST_GUILESS_MAIN(TestTrace)
#include "tst_trace.moc"
