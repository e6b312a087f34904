// Engine stage 5: diagnosis (slow steps, ranks, links, switches) measured against the anomalies the
// simulator injects, and its silence on clean captures.
#include "test_util.h"
#include "analysis/diagnosis_internal.h"
#include "analysis/evaluate.h"
#include "analysis/pipeline.h"
#include "analysis/stats.h"
#include "io/report_json.h"
#include "sim/simulator.h"

#include <QtTest>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

using namespace prism;
using namespace prism::test;

namespace {

std::vector<const Finding*> ofKind(const JobInfo& job, const std::string& kind) {
    std::vector<const Finding*> out;
    for (const Finding& f : job.findings)
        if (f.kind == kind) out.push_back(&f);
    return out;
}

double evidence(const Finding& f, const std::string& name) {
    for (const auto& [n, v] : f.evidence)
        if (n == name) return v;
    return -1;
}

// The first job's one slow rank where the truth has it: its only slow_rank finding, on a GPU of a slow_rank
// anomaly's group; null when there is none, more than one, or it names another GPU.
const Finding* theSlowRankOfTruth(const Report& report, const sim::SimResult& sim) {
    const auto slow = ofKind(report.jobs.at(0), "slow_rank");
    if (slow.size() != 1) return nullptr;
    const auto& truth = sim.truth.jobs.at(0).anomalies;
    const bool named = std::any_of(truth.begin(), truth.end(), [&](const Finding& a) {
        return a.kind == "slow_rank" && std::find(a.group.begin(), a.group.end(), slow[0]->ip) != a.group.end();
    });
    return named ? slow[0] : nullptr;
}

QString describe(const Report& report) {
    QString s;
    for (const JobInfo& j : report.jobs)
        for (const Finding& f : j.findings) s += QString::fromStdString(j.id + ": " + f.message + "\n");
    return s;
}

} // namespace

class TestDiagnosis : public QObject {
    Q_OBJECT

private slots:
    // The bar: precision and recall >= 0.95 with the right place and an overlapping step range,
    // over many seeds of the anomalies preset (slow rank, slow link and slow step in one job, one clean job).
    void anomaliesAreFoundWithTheirPlaceAndSteps() {
        PrecisionRecall total;
        std::map<std::string, PrecisionRecall> byKind;
        for (int seed = 1; seed <= 20; ++seed) {
            sim::SimResult sim = sim::simulate(presetConfig("anomalies", seed));
            Report report = analyzeCapture(captureOf(sim));
            EvaluationResult ev = evaluate(report, sim.truth);
            total += ev.totals.findings;
            for (const auto& [kind, pr] : ev.totals.findingsByKind) byKind[kind] += pr;
            // The clean job of the preset raises nothing.
            QCOMPARE(report.jobs.size(), std::size_t(2));
            for (const JobScore& js : ev.jobs)
                if (js.truthIndex >= 0 && sim.truth.jobs[std::size_t(js.truthIndex)].anomalies.empty())
                    QVERIFY2(report.jobs[std::size_t(js.reportIndex)].findings.empty(), qPrintable(describe(report)));
        }
        QCOMPARE(total.truthItems, std::size_t(60));
        QVERIFY2(total.precision() >= 0.95, qPrintable(QString::number(total.precision())));
        QVERIFY2(total.recall() >= 0.95, qPrintable(QString::number(total.recall())));
        for (const char* kind : {"slow_rank", "slow_link", "slow_step"}) {
            QVERIFY2(byKind[kind].recall() >= 0.95, kind);
            QVERIFY2(byKind[kind].precision() >= 0.95, kind);
        }
    }

    // The same bar on a pure pipeline (no DP bursts: steps from the PP rhythm, ranks by their stage's compute).
    void pipelineAnomaliesAreFoundWithTheirPlaceAndSteps() {
        PrecisionRecall total;
        for (int seed = 1; seed <= 10; ++seed) {
            sim::SimResult sim = sim::simulate(presetConfig("pp-anomalies", seed));
            Report report = analyzeCapture(captureOf(sim));
            EvaluationResult ev = evaluate(report, sim.truth);
            total += ev.totals.findings;
            QVERIFY2(ev.totals.steps.found() >= 0.995, qPrintable(describe(report)));
            QCOMPARE(ev.totals.steps.spurious(), std::size_t(0));
            QVERIFY(ev.totals.steps.maxDurationError <= 0.01);
        }
        QCOMPARE(total.truthItems, std::size_t(30));
        QVERIFY2(total.precision() >= 0.95, qPrintable(QString::number(total.precision())));
        QVERIFY2(total.recall() >= 0.95, qPrintable(QString::number(total.recall())));
    }

    // Exporters lose records. With one channel per transfer a lost record is a lost transfer, and at a few %
    // half the ranks of a stage miss one transfer each in a step, each a different one: their micro-batches are
    // renumbered, so their compute samples pair the wrong inputs and outputs. Those rank-steps must be left out
    // (they once gave precision 0.26-0.43 at 2% loss, and up to 23 false slow ranks per capture at 5%).
    void lostRecordsRaiseNoFalseFindings_data() {
        QTest::addColumn<int>("channels");
        QTest::addColumn<double>("loss");
        QTest::newRow("one channel, 2% lost") << 1 << 0.02;
        QTest::newRow("two channels, 5% lost") << 2 << 0.05;
    }

    void lostRecordsRaiseNoFalseFindings() {
        QFETCH(int, channels);
        QFETCH(double, loss);
        PrecisionRecall injected;
        std::size_t runs = 0;
        for (const char* preset : {"tiny", "pure-pp", "pure-dp", "deep-pipeline", "anomalies"})
            for (int seed = 1; seed <= 10; ++seed) {
                sim::SimConfig c = presetConfig(preset, seed);
                for (auto& job : c.jobs) job.channels = channels;
                c.lossRate = loss;
                sim::SimResult sim = sim::simulate(c);
                Report report = analyzeCapture(captureOf(sim));
                EvaluationResult ev = evaluate(report, sim.truth);
                ++runs;
                QVERIFY2(ev.totals.steps.exact(), qPrintable(QString("%1 seed %2").arg(preset).arg(seed)));
                if (std::string(preset) == "anomalies") {
                    injected += ev.totals.findings;
                    continue;
                }
                for (const JobInfo& j : report.jobs)
                    QVERIFY2(j.findings.empty(),
                             qPrintable(QString("%1 seed %2: %3").arg(preset).arg(seed).arg(describe(report))));
            }
        QCOMPARE(runs, std::size_t(50));
        QCOMPARE(injected.truthItems, std::size_t(30));
        QVERIFY2(injected.precision() >= 0.95, qPrintable(QString::number(injected.precision())));
        QVERIFY2(injected.recall() >= 0.95, qPrintable(QString::number(injected.recall())));
    }

    void cleanCapturesGiveNoFindings_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        for (const char* p : {"tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "reuse"})
            for (int seed = 1; seed <= 3; ++seed)
                QTest::newRow(qPrintable(QString("%1 seed %2").arg(p).arg(seed))) << QString(p) << seed;
    }

    void cleanCapturesGiveNoFindings() {
        QFETCH(QString, preset);
        QFETCH(int, seed);
        Report report = analyzeCapture(captureOf(sim::simulate(presetConfig(qPrintable(preset), seed))));
        QVERIFY(!report.jobs.empty());
        for (const JobInfo& j : report.jobs) {
            QVERIFY2(j.findings.empty(), qPrintable(describe(report)));
            QVERIFY(std::none_of(j.steps.begin(), j.steps.end(), [](const StepInfo& s) { return s.slow; }));
        }
    }

    // A slow rank slows its steps; those steps are slow, but the finding is the rank, not a slow step.
    void slowStepsExplainedByASlowRankAreNotReportedTwice() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 3));
        Report report = analyzeCapture(captureOf(sim));
        const Finding& truth = sim.truth.jobs[0].anomalies[0];
        QCOMPARE(truth.kind, std::string("slow_rank"));
        const JobInfo& job = report.jobs[0];
        auto ranks = ofKind(job, "slow_rank");
        QCOMPARE(ranks.size(), std::size_t(1));
        QCOMPARE(ranks[0]->firstStep, truth.firstStep);
        QCOMPARE(ranks[0]->lastStep, truth.lastStep);
        const std::set<std::string> group(truth.group.begin(), truth.group.end());
        QVERIFY(group.count(ranks[0]->ip));
        QCOMPARE(ranks[0]->group.size(), truth.group.size()); // the whole TP group, and only it
        for (const std::string& ip : ranks[0]->group) QVERIFY(group.count(ip));
        for (int k = truth.firstStep; k <= truth.lastStep; ++k) QVERIFY(job.steps[std::size_t(k)].slow);
        for (const Finding* f : ofKind(job, "slow_step"))
            QVERIFY(f->lastStep < truth.firstStep || f->firstStep > truth.lastStep);
        QVERIFY(evidence(*ranks[0], "ratio") > 1.4);
    }

    // A pause before one step: every rank silent, so it is a slow step whatever else happens.
    // Without DP traffic a step ends with the gradient into stage 0, so a slow stage 0 still works through its
    // last backwards after its episode's last step: silence before the next step, which is its work, not a
    // pause. A real pause there is still one.
    void aSlowFirstStageDoesNotSpillIntoASlowStep() {
        for (int seed = 1; seed <= 3; ++seed)
            for (bool pause : {false, true}) {
                sim::SimConfig config = presetConfig("pure-pp", seed);
                config.anomalies = {{"slow_rank", 0, config.jobs[0].hosts[0], seed, 5, 9, 2.0, 0}};
                if (pause) config.anomalies.push_back({"slow_step", 0, 0, 0, 10, 10, 0.0, 150'000'000});
                sim::SimResult sim = sim::simulate(config);
                const Report report = analyzeCapture(captureOf(sim));
                const EvaluationResult ev = evaluate(report, sim.truth);
                QVERIFY2(ev.totals.findings.exact(), qPrintable(describe(report)));
                QCOMPARE(ofKind(report.jobs[0], "slow_step").size(), std::size_t(pause ? 1 : 0));
                QCOMPARE(ofKind(report.jobs[0], "slow_rank").size(), std::size_t(1));
            }
    }

    // Slow links with few peers to compare: in pure-dp's synchronous rings the slow NIC is the one whose
    // transfers end last, counted by whole transfers (a slow transfer is split into more active-timeout
    // records, whose early pieces used to blame its ring neighbour); in a 3-stage pipeline the middle NIC's
    // neighbours have no other peer, so all three are slow with everyone, and the slow pairs all touch it.
    void slowLinksWithFewPeersArePlaced() {
        struct Case {
            const char* preset;
            int pp, host, gpu, seed;
            double factor;
        };
        for (const Case& c : {Case{"pure-dp", 0, 3, 4, 4, 3.0}, Case{"pure-dp", 0, 2, 0, 16, 3.0},
                              Case{"pure-dp", 0, 4, 4, 4, 3.0}, Case{"pure-pp", 3, 1, 3, 1, 4.0},
                              Case{"pure-pp", 3, 1, 6, 2, 2.0}}) {
            sim::SimConfig config = presetConfig(c.preset, c.seed);
            sim::JobSpec& job = config.jobs[0];
            if (c.pp) {
                job.pp = c.pp;
                job.hosts.resize(std::size_t(c.pp));
            }
            config.anomalies = {{"slow_link", 0, job.hosts[std::size_t(c.host)], c.gpu, 5, 9, c.factor, 0}};
            sim::SimResult sim = sim::simulate(config);
            const Report report = analyzeCapture(captureOf(sim));
            QVERIFY2(evaluate(report, sim.truth).totals.findings.exact(), qPrintable(describe(report)));
        }
    }

    // Slow links are judged step by step, each step's transfers dropped once the records have moved past it
    // (the transfers were the analysis's largest allocation): the findings are those of holding every transfer
    // to the end, with transfers split by a short active timeout (records that continue each other across a
    // step's end), lost records, larger clock offsets, and a transfer that outlasts several steps.
    void slowLinksJudgedStepByStepAreThoseOfTheWholeJob() {
        auto findingsText = [](const Report& r) {
            std::string s;
            for (const JobInfo& j : r.jobs)
                for (const Finding& f : j.findings) {
                    s += j.id + " " + f.kind + " " + f.ip + " " + f.srcIp + ">" + f.dstIp + " " +
                         std::to_string(f.firstStep) + "-" + std::to_string(f.lastStep) + " " + f.message;
                    for (const auto& [n, v] : f.evidence) s += " " + n + "=" + std::to_string(v);
                    s += "\n";
                }
            return s;
        };
        struct Case {
            const char* preset;
            int seed;
            std::int64_t activeTimeoutNs, skewNs;
            double loss;
        };
        std::size_t links = 0;
        for (const Case& c :
             {Case{"anomalies", 1, 1'000'000, 20'000, 0.005}, Case{"anomalies", 2, 50'000, 20'000, 0.02},
              Case{"anomalies", 3, 1'000'000, 2'000'000, 0.005}, Case{"pp-anomalies", 1, 100'000, 20'000, 0.02},
              Case{"pure-dp", 4, 1'000'000, 20'000, 0.005}, Case{"pure-dp", 5, 20'000, 500'000, 0.02}}) {
            sim::SimConfig config = presetConfig(c.preset, c.seed);
            config.activeTimeoutNs = c.activeTimeoutNs;
            config.maxSkewNs = c.skewNs;
            config.lossRate = c.loss;
            if (std::string(c.preset) == "pure-dp")
                config.anomalies = {{"slow_link", 0, config.jobs[0].hosts[2], 1, 4, 8, 3.0, 0}};
            Capture capture = captureOf(sim::simulate(config));
            if (c.seed <= 2) {
                // One transfer that outlasts several steps: a record chain on one channel of a RoCE record a third
                // into the capture, each record touching the last, a fifth of the capture in all. Its step waits
                // for it to close.
                FlowTable& f = capture.flows;
                std::size_t r0 = f.size() / 3;
                while (!f.isRoce(r0)) ++r0;
                const std::int64_t piece = (f.startNs.back() - f.startNs.front()) / 5 / 200;
                for (int i = 0; i < 200; ++i) {
                    const std::int64_t s0 = f.startNs[r0] + std::int64_t(i) * piece;
                    f.append(s0, s0 + piece - 1'000, f.src[r0], f.dst[r0], f.srcPort[r0], f.dstPort[r0], f.proto[r0],
                             4096, 4);
                }
                f.sortByStart();
            }
            AnalysisOptions whole;
            whole.diagnosis.judgeStepByStep = false;
            const std::string stepByStep = findingsText(analyzeCapture(capture)),
                              held = findingsText(analyzeCapture(capture, whole));
            QCOMPARE(stepByStep, held);
            for (std::size_t at = 0; (at = held.find(" slow_link ", at)) != std::string::npos; ++at) ++links;
        }
        QVERIFY2(links >= 5, qPrintable(QString::number(links))); // the cases do find slow links
    }

    // With congestion counts in the records (packet captures), a slow link's finding says what the slow NIC's
    // packets show: retransmissions, CNPs, ECN-CE marks in its steps, or that there were none.
    void aSlowLinkCarriesTheCongestionEvidenceOfItsPackets() {
        sim::SimConfig config = presetConfig("tiny", 2);
        config.anomalies = {{"slow_link", 0, config.jobs[0].hosts[1], 0, 5, 9, 4.0, 0}};
        sim::SimResult sim = sim::simulate(config);
        Capture capture = captureOf(sim);
        const Report plain = analyzeCapture(capture);
        auto links = ofKind(plain.jobs[0], "slow_link");
        QCOMPARE(links.size(), std::size_t(1));
        QVERIFY(links[0]->message.find("congestion") == std::string::npos); // no counts: nothing said
        // Mark the slow NIC's records of steps 5-9 as a packet capture would count them.
        FlowTable& f = capture.flows;
        f.enableCongestion();
        const IpAddr nic = *IpAddr::parse(links[0]->ip);
        const StepInfo &a = plain.jobs[0].steps[5], &b = plain.jobs[0].steps[9];
        std::size_t marked = 0;
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f.isRoce(i) && f.endpoints.at(f.src[i]) == nic && f.startNs[i] >= a.startNs && f.startNs[i] <= b.endNs) {
                f.retransmits[i] = 2;
                f.cnps[i] = 3;
                f.ecnCe[i] = 5;
                ++marked;
            }
        QVERIFY(marked > 10);
        const Report counted = analyzeCapture(capture);
        auto found = ofKind(counted.jobs[0], "slow_link");
        QCOMPARE(found.size(), std::size_t(1));
        QCOMPARE(evidence(*found[0], "retransmits"), 2.0 * double(marked));
        QCOMPARE(evidence(*found[0], "cnps"), 3.0 * double(marked));
        QCOMPARE(evidence(*found[0], "ecn_ce"), 5.0 * double(marked));
        QVERIFY(found[0]->message.find("congestion seen") != std::string::npos);
    }

    // When over half of the steps are slowed the median step is a slow one: two 5-step anomalies among 19
    // steps (a 2x slow link, then 40 ms pauses) hid the pauses (robust z 3.4 against the median). The fastest
    // cluster of durations, when it holds a fifth of the steps or more, is the usual step.
    void slowStepsAreFoundWhenHalfTheStepsAreSlowed() {
        for (int seed = 1; seed <= 6; ++seed) {
            sim::SimConfig config = presetConfig("pure-dp", seed);
            const sim::JobSpec& job = config.jobs[0];
            config.anomalies = {{"slow_link", 0, job.hosts[std::size_t(seed) % job.hosts.size()], 1, 3, 7, 2.0, 0},
                                {"slow_step", 0, 0, 0, 14, 18, 0.0, 40'000'000}};
            sim::SimResult sim = sim::simulate(config);
            Report report = analyzeCapture(captureOf(sim));
            EvaluationResult ev = evaluate(report, sim.truth);
            QVERIFY2(ev.totals.findings.exact(), qPrintable(QString("seed %1: %2").arg(seed).arg(describe(report))));
            auto steps = ofKind(report.jobs[0], "slow_step");
            QCOMPARE(steps.size(), std::size_t(1));
            QVERIFY(evidence(*steps[0], "usual_step_ms") < evidence(*steps[0], "median_step_ms"));
            QVERIFY(steps[0]->message.find("usual step") != std::string::npos);
        }
        // With few slowed steps the usual step is the median, as before.
        Report clean = analyzeCapture(captureOf(sim::simulate(presetConfig("anomalies", 1))));
        for (const Finding* f : ofKind(clean.jobs[0], "slow_step"))
            QCOMPARE(evidence(*f, "usual_step_ms"), evidence(*f, "median_step_ms"));
    }

    void aJobWidePauseIsASlowStep() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 4));
        Report report = analyzeCapture(captureOf(sim));
        const Finding& truth = sim.truth.jobs[0].anomalies[2];
        QCOMPARE(truth.kind, std::string("slow_step"));
        auto steps = ofKind(report.jobs[0], "slow_step");
        QCOMPARE(steps.size(), std::size_t(1));
        QCOMPARE(steps[0]->firstStep, truth.firstStep);
        QCOMPARE(steps[0]->lastStep, truth.lastStep);
        QVERIFY(evidence(*steps[0], "silence_ms") > 140); // the injected pause is 150 ms
        QVERIFY(steps[0]->score > 2.0);
    }

    void checkpointsEveryNStepsAreOnePattern() {
        sim::SimConfig config = presetConfig("tiny", 5);
        config.jobs[0].steps = 30;
        for (int s : {5, 10, 15, 20, 25}) config.anomalies.push_back({"slow_step", 0, 0, 0, s, s, 0.0, 40'000'000});
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        const JobInfo& job = report.jobs[0];
        QCOMPARE(job.findings.size(), std::size_t(1));
        const Finding& f = job.findings[0];
        QCOMPARE(f.kind, std::string("periodic_stall"));
        QCOMPARE(f.firstStep, 5);
        QCOMPARE(f.lastStep, 25);
        QCOMPARE(f.periodSteps, 5);
        QCOMPARE(f.occurrences, (std::vector<int>{5, 10, 15, 20, 25}));
        QVERIFY(evidence(f, "stall_ms_each") > 35); // 40 ms pauses
        QVERIFY(f.message.find("every 5 steps") != std::string::npos);
        EvaluationResult ev = evaluate(report, sim.truth);
        QVERIFY(ev.totals.findings.exact());
        int slow = 0;
        for (const StepInfo& s : job.steps) slow += s.slow;
        QCOMPARE(slow, 5);
    }

    // The pattern is found beside another anomaly: a pause off the period stays a slow step of its own, and
    // one missed occurrence does not hide the others.
    void aPeriodicStallKeepsItsPeriodBesideAnotherPause() {
        sim::SimConfig config = presetConfig("tiny", 6);
        config.jobs[0].steps = 40;
        for (int s : {6, 14, 22, 30, 38}) config.anomalies.push_back({"slow_step", 0, 0, 0, s, s, 0.0, 40'000'000});
        config.anomalies.push_back({"slow_step", 0, 0, 0, 11, 11, 0.0, 60'000'000});
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        auto stalls = ofKind(report.jobs[0], "periodic_stall");
        QCOMPARE(stalls.size(), std::size_t(1));
        QCOMPARE(stalls[0]->periodSteps, 8);
        QCOMPARE(stalls[0]->occurrences, (std::vector<int>{6, 14, 22, 30, 38}));
        auto steps = ofKind(report.jobs[0], "slow_step");
        QCOMPARE(steps.size(), std::size_t(1));
        QCOMPARE(steps[0]->firstStep, 11);
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // A stage slower by construction (Megatron's last stage with the loss and vocabulary) is one slow_stage
    // finding naming the stage and its cost per step; balanced pipelines give none.
    void aStructurallySlowStageIsNamedWithItsCost_data() {
        QTest::addColumn<int>("seed");
        for (int seed = 1; seed <= 3; ++seed) QTest::newRow(qPrintable(QString("seed %1").arg(seed))) << seed;
    }
    void aStructurallySlowStageIsNamedWithItsCost() {
        QFETCH(int, seed);
        sim::SimResult sim = simulatePreset("megatron-8", seed);
        Report report = analyzeCapture(captureOf(sim));
        auto stages = ofKind(report.jobs[0], "slow_stage");
        QCOMPARE(stages.size(), std::size_t(1));
        QCOMPARE(stages[0]->stage, report.jobs[0].pp - 1);
        QVERIFY(std::abs(stages[0]->score - 1.6) < 0.1); // the preset's last stage is 1.6x
        // 16 micro-batches of 0.6 x 24 ms extra: ~230 ms of each step
        QVERIFY(std::abs(evidence(*stages[0], "cost_ms_per_step") - 230) < 30);
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
        for (const char* balanced : {"deep-pipeline", "zero1", "megatron-64"}) {
            Report r = analyzeCapture(captureOf(simulatePreset(balanced, seed)));
            QVERIFY2(ofKind(r.jobs[0], "slow_stage").empty(), balanced);
        }
    }

    // A single pipeline whose stage 0 is slow all through the job: every other stage waits for it. Stage 0 sends no
    // gradients, but past its warm-up each forward follows a backward: it is judged as a stage (with one pipeline a
    // slow GPU and a slow stage are one place), not "nothing slow".
    void aSlowFirstStageOfASinglePipelineIsNamed() {
        sim::SimConfig c = presetConfig("pure-pp", 2);
        c.anomalies.clear();
        const sim::JobSpec& j = c.jobs[0];
        c.anomalies.push_back({"slow_rank", 0, j.hosts[0], j.firstGpu, 0, j.steps - 1, 2.0, 0});
        const sim::SimResult sim = sim::simulate(c);
        const Report report = analyzeCapture(captureOf(sim));
        const auto stages = ofKind(report.jobs[0], "slow_stage");
        QCOMPARE(stages.size(), std::size_t(1));
        QCOMPARE(stages[0]->stage, 0);
        QVERIFY(contains(stages[0]->message, "single pipeline"));
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // The last stage of an interleaved pipeline hands stage 0 its next chunks: only its warm-up forwards are
    // samples. Scaled by the middle stages' whole per forward, a last stage 2.5x slower is named (it was "nothing
    // slow"); clean interleaved pipelines, and tied-embedding rings whose last stage sends no warm-up, give none.
    void theLastStageOfAnInterleavedPipelineIsJudged_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("chunks");
        QTest::addColumn<double>("factor");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<int>("seed");
        for (int seed = 1; seed <= 2; ++seed) {
            QTest::newRow(qPrintable(QString("nodp 3 chunks x2.5 seed %1").arg(seed)))
                << "interleaved-nodp" << 3 << 2.5 << false << seed;
            QTest::newRow(qPrintable(QString("dp 2 chunks x2.5 seed %1").arg(seed)))
                << "interleaved" << 2 << 2.5 << false << seed;
            QTest::newRow(qPrintable(QString("nodp clean seed %1").arg(seed)))
                << "interleaved-nodp" << 2 << 1.0 << false << seed;
            QTest::newRow(qPrintable(QString("pure-pp tied clean seed %1").arg(seed)))
                << "pure-pp" << 1 << 1.0 << true << seed;
        }
    }
    void theLastStageOfAnInterleavedPipelineIsJudged() {
        QFETCH(QString, preset);
        QFETCH(int, chunks);
        QFETCH(double, factor);
        QFETCH(bool, tied);
        QFETCH(int, seed);
        sim::SimConfig c = presetConfig(qPrintable(preset), seed);
        sim::JobSpec& j = c.jobs[0];
        j.virtualStages = chunks;
        j.microBatches = 3 * j.pp;
        j.lastStageFactor = factor;
        j.tiedEmbedding = tied;
        const sim::SimResult sim = sim::simulate(c);
        const Report report = analyzeCapture(captureOf(sim));
        const auto stages = ofKind(report.jobs[0], "slow_stage");
        if (factor == 1.0) {
            QVERIFY(stages.empty());
            return;
        }
        QCOMPARE(stages.size(), std::size_t(1));
        QCOMPARE(stages[0]->stage, report.jobs[0].pp - 1);
        QVERIFY2(stages[0]->score > 1.5, qPrintable(QString::number(stages[0]->score)));
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // A NIC 2.3x slow in steps 9-14 (random draw 100176: TP 4 x PP 6 x DP 3, 3 chunks, tied embedding) made its
    // host's TP group read 1.80x slow in exactly those steps: one finding, the link.
    void aSlowLinksOwnHostIsNoSlowRank() {
        const sim::SimResult sim = sim::simulate(sim::randomConfig(100176));
        const Report report = analyzeCapture(captureOf(sim));
        QCOMPARE(ofKind(report.jobs[0], "slow_link").size(), std::size_t(1));
        QVERIFY(ofKind(report.jobs[0], "slow_rank").empty());
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // Pipelines whose DP peers share a host (random draw 100187: TP 2 x PP 3 x DP 4, one stage a host): a GPU
    // 2.09x slow all run was compared with its own usual only (no peers on other hosts) and missed. Its
    // replicas on the host are its peers: found, at 2.08x, one finding.
    void aGpuSlowAllRunAmongReplicasOnItsHostIsFound() {
        const sim::SimResult sim = sim::simulate(sim::randomConfig(100187));
        const Report report = analyzeCapture(captureOf(sim));
        const auto slow = ofKind(report.jobs[0], "slow_rank");
        QCOMPARE(slow.size(), std::size_t(1));
        double ratio = 0;
        for (const auto& [name, value] : slow[0]->evidence)
            if (name == "ratio") ratio = value;
        QVERIFY2(ratio > 1.9 && ratio < 2.3, qPrintable(QString::number(ratio)));
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // A GPU slow all run in one pipeline makes the rest of that pipeline wait: stage 0 of the same replica read
    // 1.14x slow beside the 2.79x GPU at stage 5 (random draw 300044: TP 8 x PP 6 x DP 3, accumulation 3). The
    // echo in the same pipeline, inside the slower one's steps, is dropped: one finding, the right one.
    // (Random draw 300106: TP 4 x PP 3 x DP 4, 2 chunks: stage 0 read 1.55x in steps 10-12 behind stage 1's
    // 1.81x in 9-11, a step boundary between the two.)
    void aSlowGpusEchoInItsOwnPipelineIsNoSecondFinding_data() {
        QTest::addColumn<int>("seed");
        QTest::newRow("300044 inside its steps") << 300044;
        QTest::newRow("300106 a step off") << 300106;
    }
    void aSlowGpusEchoInItsOwnPipelineIsNoSecondFinding() {
        QFETCH(int, seed);
        const sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        const Report report = analyzeCapture(captureOf(sim));
        QVERIFY2(theSlowRankOfTruth(report, sim), qPrintable(describe(report)));
    }

    // Stage 0 of an interleaved pipeline is sampled on its warm-up forwards only (the ring's hand-overs come in an
    // order the network does not show): without DP on the network it is estimated as the ring's last stage is,
    // against the middle stages' first forwards of the step, which wait alike for what the network does not show
    // there. A stage 0 slowed 2.43x all run (random draw 300054: TP 8 x PP 3 x DP 1, 3 chunks, one GPU of its TP
    // group slow) and 2.73x (300116: TP 4 x PP 3 x DP 1) was never named; a clean 4-chunk draw whose replicas
    // share hosts (100005: TP 1 x PP 7 x DP 2, distributed optimizer overlapped, its all-gather inside the
    // hosts) has none, where its warm-up forwards read 2.2x the middle stages' forwards of the whole step.
    void aSlowFirstStageOfAnInterleavedPipelineIsFound_data() {
        QTest::addColumn<int>("seed");
        QTest::addColumn<double>("factor"); // 0: clean
        QTest::newRow("300054") << 300054 << 2.43;
        QTest::newRow("300116") << 300116 << 2.73;
        QTest::newRow("100005 clean") << 100005 << 0.0;
    }
    void aSlowFirstStageOfAnInterleavedPipelineIsFound() {
        QFETCH(int, seed);
        QFETCH(double, factor);
        const sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        const Report report = analyzeCapture(captureOf(sim));
        const auto stages = ofKind(report.jobs[0], "slow_stage");
        QCOMPARE(ofKind(report.jobs[0], "slow_rank").size(), std::size_t(0));
        if (factor == 0) {
            QCOMPARE(stages.size(), std::size_t(0));
            return;
        }
        QCOMPARE(stages.size(), std::size_t(1));
        QCOMPARE(stages[0]->stage, 0);
        QVERIFY2(std::abs(stages[0]->score / factor - 1) < 0.15, qPrintable(QString::number(stages[0]->score)));
    }

    // A stage whose fix would save under 1% of a step made no one wait: random draw 300008 (TP 1 x PP 3 x DP 12,
    // EP 6, 1 ms records, clean) read stage 1 at 2.5x over one micro-batch a step, 3 ms of a 916 ms step.
    void aSlowStageThatCostsNothingIsNoFinding() {
        const sim::SimResult sim = sim::simulate(sim::randomConfig(300008));
        QVERIFY(sim.truth.jobs[0].anomalies.empty());
        const Report report = analyzeCapture(captureOf(sim));
        QVERIFY(ofKind(report.jobs[0], "slow_stage").empty());
    }

    // A GPU 2.81x slow all run at the last stage of an interleaved pipeline (random draw 300124: TP 8 x PP 4 x DP 5,
    // 3 chunks): its busy time before PP sends sampled 30 ms of a 4.5 s step, so its fix read as 20 ms a step and
    // the finding fell below the saved share. Its peers' rings began up to 2.8 s before its own: what fixing it
    // saves is what its ratio implies over its span before the sync, capped by the peer next ready.
    void aSlowGpuWhosePeersWaitInsideTheRingIsFoundWithItsCost() {
        const sim::SimResult sim = sim::simulate(sim::randomConfig(300124));
        const Report report = analyzeCapture(captureOf(sim));
        const auto slow = ofKind(report.jobs[0], "slow_rank");
        QCOMPARE(slow.size(), std::size_t(1));
        std::vector<std::int64_t> durations;
        for (const StepInfo& s : report.jobs[0].steps) durations.push_back(s.durationNs());
        const std::int64_t median = upperMedian(std::move(durations));
        const double share = slow[0]->savesMsPerStep * 1e6 / double(median);
        QVERIFY2(share > 0.4 && share < 0.8, qPrintable(QString::number(share)));
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // A GPU slow all run in one pipeline replica holds the other replicas at their first DP sync, on another
    // stage, and its own stage's peers then wait on their PP receives: before their own sync they waited
    // milliseconds (random draw 100007: TP 2 x PP 6 x DP 8, 2.48x at stage 0, 3.8 s steps; its fix read as 6 ms a
    // step and the finding was dropped). Busier than every other TP group of the job, it sets the step: found,
    // with what it costs. (100186: TP 4 x PP 7 x DP 5, 2.97x at stage 0, 1 ms records at 1.3% loss: transfers
    // split by a lost piece left no rank of stage 0 judged in any step, until the timeline rejoined them.)
    void aSlowReplicaThatHoldsTheOthersElsewhereIsFound_data() {
        QTest::addColumn<int>("seed");
        QTest::newRow("100007 peers wait on PP receives") << 100007;
        QTest::newRow("100186 1 ms records, split transfers") << 100186;
    }
    void aSlowReplicaThatHoldsTheOthersElsewhereIsFound() {
        QFETCH(int, seed);
        const sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        const Report report = analyzeCapture(captureOf(sim));
        const Finding* slow = theSlowRankOfTruth(report, sim);
        QVERIFY2(slow, qPrintable(describe(report)));
        std::vector<std::int64_t> durations;
        for (const StepInfo& s : report.jobs[0].steps) durations.push_back(s.durationNs());
        const double share = slow->savesMsPerStep * 1e6 / double(upperMedian(std::move(durations)));
        QVERIFY2(share > 0.1, qPrintable(QString::number(share)));
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // At 1-2% loss the members of an EP group miss a few of a step's hundred exchanges each, a different few:
    // matched by index, a step was judged only where every member's count was the same, rarely, and a GPU slow
    // among its expert peers went unnamed (random draw 300069: TP 2 x DP 57 with EP 3, 2.88x all run, read as
    // uneven work across replicas; 300147: DP 5 = EP 5, 2.99x in steps 11-13, a slow step; 100188: TP 1 x PP 4
    // x DP 7 = EP 7, 3 chunks, 2.90x all run, nothing). Matched in rounds by time, it is named by its late
    // all-to-all, and nothing else is.
    void aSlowGpuAmongExpertPeersIsFoundDespiteLostExchanges_data() {
        QTest::addColumn<int>("seed");
        QTest::newRow("300069 EP 3 under pure DP") << 300069;
        QTest::newRow("300147 EP 5 = DP 5, three steps") << 300147;
        QTest::newRow("100188 EP 7 = DP 7, 3 chunks") << 100188;
    }
    void aSlowGpuAmongExpertPeersIsFoundDespiteLostExchanges() {
        QFETCH(int, seed);
        const sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        const Report report = analyzeCapture(captureOf(sim));
        const Finding* slow = theSlowRankOfTruth(report, sim);
        QVERIFY2(slow, qPrintable(describe(report)));
        QVERIFY(slow->message.find("expert all-to-all") != std::string::npos);
        QVERIFY2(evaluate(report, sim.truth).totals.findings.exact(), qPrintable(describe(report)));
    }

    // A pause of 7.5% of a step in a steady job (the steps' own spread about 1%) is a slow step: it stands out by
    // far more than kSigma, under the 10% a lasting slowdown needs (random draw 300144: 1.3 s in a 17.7 s step
    // was missed).
    void aShortPauseInASteadyJobIsASlowStep() {
        for (const char* preset : {"pure-dp", "tiny", "deep-pipeline"}) {
            sim::SimConfig config = presetConfig(preset, 1);
            config.anomalies.clear();
            const sim::SimResult clean = sim::simulate(config);
            std::vector<std::int64_t> durations;
            for (const StepInfo& st : clean.truth.jobs[0].steps) durations.push_back(st.durationNs());
            const std::int64_t pause = upperMedian(std::move(durations)) * 75 / 1000;
            config.anomalies = {{"slow_step", 0, 0, 0, 8, 8, 0.0, pause}};
            const sim::SimResult sim = sim::simulate(config);
            const Report report = analyzeCapture(captureOf(sim));
            const auto steps = ofKind(report.jobs[0], "slow_step");
            QVERIFY2(steps.size() == 1 && steps[0]->firstStep == 8 && steps[0]->lastStep == 8, preset);
            QVERIFY2(evaluate(report, sim.truth).totals.findings.exact(), preset);
        }
    }

    // With gradient accumulation each round drains the pipeline, and stage 0's next round starts with warm-up
    // forwards again; the round's cool-down gradients are no input of theirs. Taken as such, the first forward
    // after the drain read the drain as compute, and stage 0 of a clean 4-stage pipeline with three rounds a step
    // read 1.26x the other stages: a false slow stage (random draw 100085, six stages, two rounds, likewise).
    void gradientAccumulationMakesNoSlowFirstStage() {
        for (int seed : {1, 2, 3}) {
            sim::SimConfig config = presetConfig("grad-accum", seed);
            config.anomalies.clear();
            config.jobs[0].pp = 4;
            config.jobs[0].dp = 1;
            const sim::SimResult sim = sim::simulate(config);
            const Report report = analyzeCapture(captureOf(sim));
            QVERIFY2(ofKind(report.jobs[0], "slow_stage").empty(), qPrintable(QString::number(seed)));
            QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
        }
    }

    // A GPU slow all run inside an expert group is named by its late all-to-all sends, and no step is longer than
    // the usual one: its cost is what its group waits for it at the exchanges, not the steps' excess (it read 0
    // and the finding was dropped as one that made nobody wait). moe, EP 4 = DP 4, a GPU 1.5x slow all run: its
    // extra compute is about 27% of a step.
    void aGpuSlowAllRunInAnExpertGroupIsFoundWithItsCost() {
        for (int seed : {2, 5}) {
            sim::SimConfig config = presetConfig("moe", seed);
            config.anomalies = {{"slow_rank", 0, config.jobs[0].hosts[std::size_t(seed)], 0, 0, 19, 1.5, 0}};
            const sim::SimResult sim = sim::simulate(config);
            const Report report = analyzeCapture(captureOf(sim));
            const auto slow = ofKind(report.jobs[0], "slow_rank");
            QCOMPARE(slow.size(), std::size_t(1));
            QVERIFY2(slow[0]->savesShare > 0.15 && slow[0]->savesShare < 0.35,
                     qPrintable(QString::number(slow[0]->savesShare)));
            QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
        }
    }

    // One pipeline (DP 1) with its last stage 1.33x heavy by construction and a GPU of stage 1 2.02x slow all run
    // (random draw 100116): two slow stages, the GPU's first; only the slowest was reported.
    void aHeavyLastStageBesideASlowGpusStageAreTwoFindings() {
        const sim::SimResult sim = sim::simulate(sim::randomConfig(100116));
        const Report report = analyzeCapture(captureOf(sim));
        const auto stages = ofKind(report.jobs[0], "slow_stage");
        QCOMPARE(stages.size(), std::size_t(2));
        QCOMPARE(stages[0]->stage + stages[1]->stage, 1 + 2);
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // Durations in findings read as a person reads them: ms below 10 s, seconds below 10 minutes, then minutes.
    void findingDurationsReadInTheirUnit() {
        QCOMPARE(diag::ms(218.5e6), std::string("218.5 ms"));
        QCOMPARE(diag::ms(4.25e6), std::string("4.25 ms"));
        QCOMPARE(diag::ms(45630.6e6), std::string("45.6 s"));
        QCOMPARE(diag::ms(88858.5e6), std::string("88.9 s"));
        QCOMPARE(diag::ms(725.4e9), std::string("12 min 5 s"));
    }

    // Two slow NICs behind one leaf (not talking to each other): two slow links and a slow switch.
    void slowLinksBehindOneLeafAreASlowSwitch() {
        // anomalies' job-a is TP 8 x PP 2 x DP 4 on 8 hosts: hosts[0] and hosts[2] hold replicas 0 and 2 of
        // stage 0, which are not neighbours in their DP ring; GPU 3 of both hangs off the rail-3 leaf. (With
        // fewer peers, two slow NICs can cover every peer of two healthy ones, and the network cannot tell
        // which pair is slow.)
        sim::SimConfig config = presetConfig("anomalies", 2);
        config.anomalies.clear();
        config.anomalies.push_back({"slow_link", 0, config.jobs[0].hosts[0], 3, 10, 16, 3.0, 0});
        config.anomalies.push_back({"slow_link", 0, config.jobs[0].hosts[2], 3, 12, 18, 3.0, 0});
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        const JobInfo& job = report.jobs[0];
        auto links = ofKind(job, "slow_link");
        auto switches = ofKind(job, "slow_switch");
        QCOMPARE(links.size(), std::size_t(2));
        QCOMPARE(switches.size(), std::size_t(1));
        const std::string leaf = sim.truth.jobs[0].anomalies[0].switchName;
        QCOMPARE(switches[0]->switchName, leaf);
        QVERIFY(switches[0]->firstStep >= 12 && switches[0]->lastStep <= 16);
        QVERIFY(switches[0]->lastStep - switches[0]->firstStep >= 3);
        QCOMPARE(evidence(*switches[0], "slow_nics"), 2.0);
        for (const Finding* l : links) {
            QCOMPARE(l->switchName, leaf);
            QVERIFY(l->score > 2.5 && l->score < 3.5); // injected: bandwidth / 3
        }
        EvaluationResult ev = evaluate(report, sim.truth);
        QVERIFY(ev.totals.findings.exact());
    }

    // In a synchronous ring every member's transfers slow down with one slow NIC; its own hops are the slowest.
    void aSlowRingMemberIsFoundByItsLateHops() {
        for (int seed = 1; seed <= 3; ++seed) {
            sim::SimConfig config = presetConfig("pure-dp", seed);
            config.anomalies.push_back({"slow_link", 0, config.jobs[0].hosts[3], 5, 6, 10, 4.0, 0});
            sim::SimResult sim = sim::simulate(config);
            Report report = analyzeCapture(captureOf(sim));
            auto links = ofKind(report.jobs[0], "slow_link");
            QCOMPARE(links.size(), std::size_t(1));
            QCOMPARE(links[0]->ip, sim.truth.jobs[0].anomalies[0].ip);
            QCOMPARE(links[0]->firstStep, 6);
            QCOMPARE(links[0]->lastStep, 10);
        }
    }

    // The same with one channel per transfer and 2% of the records lost: the holes split the slow ring into
    // pieces, each once reported as a slow NIC (with a slow switch on top; precision 0.54 over 20 seeds), and
    // lost last pieces moved the hop ends that placed the NIC. The ring is one place, its slowest member.
    void aSlowRingMemberIsFoundThroughLostRecords() {
        int runs = 0;
        for (int seed = 1; seed <= 8; ++seed)
            for (double factor : {2.0, 4.0, 8.0}) {
                sim::SimConfig config = presetConfig("pure-dp", seed);
                config.jobs[0].channels = 1;
                config.lossRate = 0.02;
                const int host = config.jobs[0].hosts[std::size_t(seed) % config.jobs[0].hosts.size()];
                config.anomalies = {{"slow_link", 0, host, seed % 8, 6, 7 + seed % 3, factor, 0}};
                sim::SimResult sim = sim::simulate(config);
                Report report = analyzeCapture(captureOf(sim));
                const QString what = QString("seed %1, factor %2: %3").arg(seed).arg(factor).arg(describe(report));
                auto links = ofKind(report.jobs[0], "slow_link");
                QVERIFY2(links.size() == 1, qPrintable(what));
                QVERIFY2(links[0]->ip == sim.truth.jobs[0].anomalies[0].ip, qPrintable(what));
                QVERIFY2(ofKind(report.jobs[0], "slow_switch").empty(), qPrintable(what));
                // The bar: the right place over an overlapping step range (the last slow step of a long
                // stretch is sometimes not flagged when its records were lost).
                QVERIFY2(links[0]->firstStep <= 7 + seed % 3 && links[0]->lastStep >= 6, qPrintable(what));
                ++runs;
            }
        QCOMPARE(runs, 24);
    }

    void aSlowStageInADeepPipelineIsLocalized() {
        sim::SimConfig config = presetConfig("deep-pipeline", 2);
        config.jobs[0].steps = 16;
        config.anomalies.push_back({"slow_rank", 0, config.jobs[0].hosts[5], 2, 4, 9, 1.5, 0});
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        EvaluationResult ev = evaluate(report, sim.truth);
        QVERIFY2(ev.totals.findings.exact(), qPrintable(describe(report)));
    }

    // A GPU slow among its expert-parallel peers (mixture of experts: all-to-all among the DP peers inside
    // every forward and backward) holds its EP group back at every exchange, and its sends start last each
    // time: it is named, with its lag, on either stage and from 1.3x to 3x, not reported as slow steps; the
    // steps it slows (cut apart by the quiet it adds inside them at 3x) come out whole.
    void aSlowGpuAmongExpertPeersIsNamedByItsLateAllToAll() {
        int seed = 3;
        for (double factor : {1.3, 3.0})
            for (std::size_t host : {0, 5}) {
                sim::SimConfig config = presetConfig("moe", seed++);
                config.anomalies = {{"slow_rank", 0, config.jobs[0].hosts[host], 2, 6, 7, factor, 0}};
                sim::SimResult sim = sim::simulate(config);
                Report report = analyzeCapture(captureOf(sim));
                EvaluationResult ev = evaluate(report, sim.truth);
                const QString what = QString("x%1 on host %2: %3").arg(factor).arg(host).arg(describe(report));
                QVERIFY2(ev.totals.steps.exact(), qPrintable(what));
                QVERIFY2(ev.totals.findings.exact(), qPrintable(what));
                auto ranks = ofKind(report.jobs[0], "slow_rank");
                QCOMPARE(ranks.size(), std::size_t(1));
                QVERIFY(evidence(*ranks[0], "all_to_all_lag_ms") > 0);
                QVERIFY(ranks[0]->message.find("expert all-to-all") != std::string::npos);
            }
    }

    // Expert exchanges told from the ring's hops: with EP < DP by direction (the hops between EP groups go one
    // way), with EP = DP by fan-out (an exchange goes to several peers at once, a hop to one). Across shapes
    // (with and without a pipeline, EP 2 and 4 in DP 4 and 8, EP = DP = 4, a distributed optimizer, two
    // channels): clean runs exact with no finding; a GPU slowed 1.3x or 3x is named by its late all-to-all,
    // steps exact.
    void expertExchangesAreToldFromTheRing() {
        struct Shape {
            const char* what;
            int pp, dp, ep;
            bool zero;
            int channels;
        };
        const Shape shapes[] = {{"pp2 dp4 ep2", 2, 4, 2, false, 1},        {"pp1 dp8 ep2", 1, 8, 2, false, 1},
                                {"pp1 dp8 ep4", 1, 8, 4, false, 1},        {"pp2 dp4 ep2 zero1", 2, 4, 2, true, 1},
                                {"pp2 dp4 ep2, 2 channels", 2, 4, 2, false, 2}, {"pp1 dp4 ep4", 1, 4, 4, false, 1},
                                {"pp2 dp8 ep4", 2, 8, 4, false, 1}};
        int seed = 60;
        for (const Shape& sh : shapes)
            for (double factor : {0.0, 1.3, 3.0}) {
                sim::SimConfig config = presetConfig("moe-ep-lt-dp", seed++);
                sim::JobSpec& j = config.jobs[0];
                config.hosts = sh.pp * sh.dp;
                j.pp = sh.pp;
                j.dp = sh.dp;
                j.expertParallel = sh.ep;
                j.distributedOptimizer = sh.zero;
                j.channels = sh.channels;
                j.hosts.resize(std::size_t(config.hosts));
                for (int h = 0; h < config.hosts; ++h) j.hosts[std::size_t(h)] = (h * 5 + seed) % config.hosts;
                config.anomalies.clear();
                if (factor > 0)
                    config.anomalies = {{"slow_rank", 0, j.hosts[std::size_t(seed % config.hosts)], 3, 6, 8, factor, 0}};
                sim::SimResult sim = sim::simulate(config);
                Report report = analyzeCapture(captureOf(sim));
                EvaluationResult ev = evaluate(report, sim.truth);
                const QString what = QString("%1 x%2: %3").arg(sh.what).arg(factor).arg(describe(report));
                QVERIFY2(ev.perfect(), qPrintable(what + "\n" + QString::fromStdString(ev.toText())));
                QVERIFY2(ev.totals.findings.exact(), qPrintable(what));
                if (factor > 0)
                    QVERIFY2(evidence(*ofKind(report.jobs[0], "slow_rank").at(0), "all_to_all_lag_ms") > 0, qPrintable(what));
            }
    }

    // Interleaved stages close the pipeline into a ring: on its ends (stage 0, the last stage) inputs cannot
    // be matched to ops. A slow GPU there is still named on its own host, from the warm-up forwards, and its
    // ring neighbour (which waits for it) is not: every host of the job in turn.
    void aSlowGpuAtARingEndIsNamedOnItsOwnHost() {
        for (std::size_t host = 0; host < 8; ++host) {
            sim::SimConfig config = presetConfig("interleaved", 40 + int(host));
            config.anomalies = {{"slow_rank", 0, config.jobs[0].hosts[host], 0, 6, 9, host % 2 ? 1.6 : 3.0, 0}};
            sim::SimResult sim = sim::simulate(config);
            Report report = analyzeCapture(captureOf(sim));
            EvaluationResult ev = evaluate(report, sim.truth);
            QVERIFY2(ev.totals.findings.exact(), qPrintable(QString("host %1: %2").arg(host).arg(describe(report))));
        }
    }

    // The same with three and four model chunks per stage: every host of the job in turn, shape, steps and
    // findings exact.
    void aSlowGpuAtARingEndIsNamedWithThreeOrFourChunks() {
        for (int v : {3, 4})
            for (std::size_t host = 0; host < 8; ++host) {
                sim::SimConfig config = presetConfig("interleaved", 60 + int(host));
                config.jobs[0].virtualStages = v;
                config.anomalies = {{"slow_rank", 0, config.jobs[0].hosts[host], 0, 6, 9, 2.0, 0}};
                sim::SimResult sim = sim::simulate(config);
                Report report = analyzeCapture(captureOf(sim));
                EvaluationResult ev = evaluate(report, sim.truth);
                const QString what = QString("v %1 host %2: %3").arg(v).arg(host).arg(describe(report));
                QVERIFY2(ev.totals.ppChains.exact() && ev.totals.steps.exact(), qPrintable(what));
                QVERIFY2(ev.totals.findings.exact(), qPrintable(what));
            }
    }

    // Three anomalies of 3-5 steps each left 7 usual steps of 19 (a slow rank, a slow link, then a 400 ms
    // pause before 5 steps in a row): the fastest cluster of durations, a fifth of the steps or more, is the
    // usual step, and the pause is found against it (against the median of the bimodal durations it hid).
    void aPauseIsFoundWhenMostStepsAreSlowed() {
        sim::SimConfig config = presetConfig("interleaved", 3);
        const sim::JobSpec& job = config.jobs[0];
        config.anomalies = {{"slow_rank", 0, job.hosts[2], 0, 8, 12, 3.0, 0},
                            {"slow_link", 0, job.hosts[5], 3, 4, 5, 8.0, 0},
                            {"slow_step", 0, 0, 0, 13, 17, 0.0, 400'000'000}};
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        EvaluationResult ev = evaluate(report, sim.truth);
        QVERIFY2(ev.totals.findings.exact(), qPrintable(describe(report)));
        auto steps = ofKind(report.jobs[0], "slow_step");
        QCOMPARE(steps.size(), std::size_t(1));
        QCOMPARE(steps[0]->firstStep, 13);
        QVERIFY(evidence(*steps[0], "usual_step_ms") < evidence(*steps[0], "median_step_ms"));
    }

    // With two pipelines there is no majority; the faster one is the reference. A slowdown over most of the
    // job must not become the job's normal either.
    void aLongSlowdownWithTwoPipelinesIsStillFound() {
        sim::SimConfig config = presetConfig("tiny", 3);
        config.jobs[0].steps = 30;
        config.anomalies.push_back({"slow_rank", 0, config.jobs[0].hosts[1], 0, 5, 25, 1.4, 0});
        sim::SimResult sim = sim::simulate(config);
        Report report = analyzeCapture(captureOf(sim));
        auto ranks = ofKind(report.jobs[0], "slow_rank");
        QCOMPARE(ranks.size(), std::size_t(1));
        QCOMPARE(ranks[0]->firstStep, 5);
        QCOMPARE(ranks[0]->lastStep, 25);
        QVERIFY(evaluate(report, sim.truth).totals.findings.exact());
    }

    // Uneven work across DP replicas (two micro-batches of widely varying length a step): each step's sync waits
    // for a different replica. One dp_imbalance finding, its cost near the waits the simulation measured, and no
    // string of one-step slow ranks beyond the job's own spread; the same job with even work has none, and one
    // GPU slow all through the job is a slow rank, not uneven work.
    void unevenWorkAcrossReplicasIsOneFinding_data() {
        QTest::addColumn<int>("seed");
        for (int seed = 1; seed <= 3; ++seed) QTest::newRow(qPrintable(QString("seed %1").arg(seed))) << seed;
    }
    void unevenWorkAcrossReplicasIsOneFinding() {
        QFETCH(int, seed);
        sim::SimConfig c = presetConfig("tiny", seed);
        c.jobs[0].microBatches = 2;
        c.jobs[0].computeJitter = 0.6;
        sim::labelOwnWork(c);
        const sim::SimResult uneven = sim::simulate(c);
        const auto& truth = uneven.truth.jobs[0].anomalies;
        const auto t = std::find_if(truth.begin(), truth.end(), [](const Finding& a) { return a.kind == "dp_imbalance"; });
        QVERIFY(t != truth.end() && !t->optional);
        const Report report = analyzeCapture(captureOf(uneven));
        const auto found = ofKind(report.jobs[0], "dp_imbalance");
        QCOMPARE(found.size(), std::size_t(1));
        // Stage 0's last backward comes after its last transfer: the network cannot see how long it took, and at
        // this jitter it is a good part of a step's spread (seed 3: 7.5% found, 12.9% in the simulation).
        QVERIFY2(std::abs(found[0]->savesShare - t->savesShare) <= 0.45 * t->savesShare,
                 qPrintable(QString("found %1, simulation %2").arg(found[0]->savesShare).arg(t->savesShare)));
        QVERIFY(contains(found[0]->message, "a different one from step to step"));
        const EvaluationResult e = evaluate(report, uneven.truth);
        QVERIFY2(e.totals.findings.reportMatched == e.totals.findings.reportItems, qPrintable(describe(report)));

        c.jobs[0].computeJitter = 0;
        sim::labelOwnWork(c);
        const Report even = analyzeCapture(captureOf(sim::simulate(c)));
        QVERIFY2(even.jobs[0].findings.empty(), qPrintable(describe(even)));

        c.anomalies.push_back({"slow_rank", 0, c.jobs[0].hosts[1], 0, 0, c.jobs[0].steps - 1, 1.3, 0});
        sim::labelOwnWork(c);
        const Report slow = analyzeCapture(captureOf(sim::simulate(c)));
        QVERIFY2(ofKind(slow.jobs[0], "dp_imbalance").empty(), qPrintable(describe(slow)));
        QCOMPARE(ofKind(slow.jobs[0], "slow_rank").size(), std::size_t(1));
    }

    void kSigmaIsASetting() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 6));
        Capture c = captureOf(sim);
        AnalysisOptions strict;
        strict.diagnosis.kSigma = 1e6;
        Report none = analyzeCapture(c, strict);
        for (const JobInfo& j : none.jobs) QVERIFY2(j.findings.empty(), qPrintable(describe(none)));
        Report some = analyzeCapture(c);
        QVERIFY(!some.jobs[0].findings.empty());
    }

    void findingsCarryEvidenceAndAOneLineMessage() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 7));
        Report report = analyzeCapture(captureOf(sim));
        const JobInfo& job = report.jobs[0];
        QCOMPARE(job.findings.size(), std::size_t(3));
        for (const Finding& f : job.findings) {
            QVERIFY(!f.message.empty());
            QVERIFY(f.message.find('\n') == std::string::npos);
            const std::string lead = f.kind == "slow_step"   ? "slow step"
                                     : f.kind == "slow_rank" ? "slow rank"
                                                             : "slow link";
            QVERIFY(f.message.rfind(lead, 0) == 0);
            QVERIFY(!f.evidence.empty());
            QVERIFY(f.score > 1.0);
            QVERIFY(f.firstStep <= f.lastStep);
            QVERIFY(evidence(f, "steps") == double(f.lastStep - f.firstStep + 1));
        }
        // Each says what fixing it would save, the costliest first; the evidence survives the report file.
        for (std::size_t i = 0; i < job.findings.size(); ++i) {
            const Finding& f = job.findings[i];
            QVERIFY2(f.savesShare > 0 && f.savesShare < 1 && f.savesMsPerStep > 0, f.message.c_str());
            QVERIFY(contains(f.message, "fixing it would save about"));
            if (i > 0) QVERIFY(job.findings[i - 1].savesShare >= f.savesShare);
        }
        nlohmann::json j = reportToJson(report);
        const auto& f0 = j["jobs"][0]["findings"][0];
        QVERIFY(f0["evidence"].is_object());
        Report back = reportFromJson(j, "memory");
        QCOMPARE(back.jobs[0].findings.size(), job.findings.size());
        for (std::size_t i = 0; i < job.findings.size(); ++i) {
            auto a = job.findings[i].evidence, b = back.jobs[0].findings[i].evidence;
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            QCOMPARE(a.size(), b.size());
            for (std::size_t k = 0; k < a.size(); ++k) {
                QCOMPARE(a[k].first, b[k].first);
                QVERIFY(qFuzzyCompare(1.0 + a[k].second, 1.0 + b[k].second));
            }
        }
        // A finding field that does not apply is left out.
        for (const auto& f : j["jobs"][0]["findings"])
            if (f["kind"] == "slow_step") QVERIFY(!f.contains("ip") && !f.contains("switch"));
    }

    // The report-only path (no segments kept) reaches the same steps and findings as the full analysis.
    void aReportOnlyAnalysisFindsTheSame() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 8));
        Capture c = captureOf(sim);
        Report light = analyzeCapture(c);
        Analysis full = runAnalysis(c);
        QCOMPARE(light.jobs.size(), full.report.jobs.size());
        QVERIFY(!light.jobs[0].findings.empty());
        for (std::size_t j = 0; j < light.jobs.size(); ++j) {
            const JobInfo &a = light.jobs[j], &b = full.report.jobs[j];
            QCOMPARE(a.steps.size(), b.steps.size());
            for (std::size_t k = 0; k < a.steps.size(); ++k) {
                QCOMPARE(a.steps[k].endNs, b.steps[k].endNs);
                QCOMPARE(a.steps[k].slow, b.steps[k].slow);
            }
            QCOMPARE(a.findings.size(), b.findings.size());
            for (std::size_t f = 0; f < a.findings.size(); ++f) QCOMPARE(a.findings[f].message, b.findings[f].message);
        }
        QCOMPARE(full.jobs.size(), full.report.jobs.size());
        for (const JobAnalysis& j : full.jobs) QVERIFY(j.division && j.timeline.segmentCount() > 0);
    }

    void badEvidenceInAReportIsAClearError() {
        nlohmann::json j = {{"format", "llmprism-report"},
                            {"version", 1},
                            {"jobs", {{{"gpus", {"10.0.0.1"}},
                                       {"findings", {{{"kind", "slow_step"}, {"evidence", {{"ratio", "high"}}}}}}}}}};
        bool threw = false;
        try {
            reportFromJson(j, "r.json");
        } catch (const std::exception& e) {
            threw = true;
            QVERIFY(std::string(e.what()).find("evidence") != std::string::npos);
        }
        QVERIFY(threw);
    }
};

QTEST_APPLESS_MAIN(TestDiagnosis)
#include "tst_diagnosis.moc"
