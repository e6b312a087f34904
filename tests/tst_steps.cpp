// Engine stage 3: step division (DP sync bursts, PP rhythm, clock alignment, BOCD), measured against the
// simulator's ground truth; the per-rank timeline of stage 4 is tested in tst_timeline.cpp.
#include "analysis/drains.h"
#include "analysis/evaluate.h"
#include "analysis/job_index.h"
#include "analysis/pipeline.h"
#include "analysis/rhythm.h"
#include "analysis/stats.h"
#include "analysis/steps.h"
#include "analysis/timeline.h"
#include "sim/simulator.h"
#include "test_util.h"

#include <QtTest>
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace prism;
using namespace prism::test;

namespace {

// The records of a capture whose start lies in [from, to).
FlowTable window(const FlowTable& in, std::int64_t from, std::int64_t to) {
    FlowTable out;
    out.endpoints = in.endpoints;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (in.startNs[i] >= from && in.startNs[i] < to)
            out.append(in.startNs[i], in.end(i), in.src[i], in.dst[i], in.srcPort[i], in.dstPort[i], in.proto[i],
                       in.bytes[i], in.packets[i]);
    return out;
}

// Step scores of one analysis against its truth.
StepScore stepScore(const Report& report, const Report& truth) { return evaluate(report, truth).totals.steps; }

// A preset's first job with one anomaly in steps 5-9 on its hosts[host] (PP stage `host` of pure-pp).
sim::SimConfig withAnomaly(const char* preset, int seed, const std::string& kind, int host, double factor) {
    sim::SimConfig config = presetConfig(preset, seed);
    const sim::JobSpec& job = config.jobs[0];
    sim::AnomalySpec a;
    a.kind = kind;
    a.job = 0;
    a.host = job.hosts[std::size_t(host)];
    a.gpu = job.firstGpu + (seed * 3) % 8;
    a.firstStep = 5;
    a.lastStep = 9;
    a.factor = factor;
    a.pauseNs = kind == "slow_step" ? 150'000'000 : 0;
    config.anomalies = {a};
    return config;
}

// The division `e` has the steps, sync starts, first activities, clock offsets, notes, change points, source,
// sync windows and expert pairs of `d`.
void sameDivision(const StepDivision& e, const StepDivision& d) {
    QCOMPARE(e.steps.size(), d.steps.size());
    for (std::size_t k = 0; k < d.steps.size(); ++k) {
        QCOMPARE(e.steps[k].startNs, d.steps[k].startNs);
        QCOMPARE(e.steps[k].endNs, d.steps[k].endNs);
    }
    QCOMPARE(e.syncStartNs, d.syncStartNs);
    QCOMPARE(e.firstActivityNs, d.firstActivityNs);
    QCOMPARE(e.clockOffsetNs, d.clockOffsetNs);
    QCOMPARE(e.notes, d.notes);
    QCOMPARE(e.changePoints, d.changePoints);
    QCOMPARE(e.source, d.source);
    QVERIFY(e.syncWindowsNs == d.syncWindowsNs);
    QVERIFY(e.expertPairs == d.expertPairs);
}

// The PP records of a simulated job as scanDrains takes them (links and stages from the truth), with the
// union of their intervals. `flip` takes every chain the wrong way round.
struct PipelineSeries {
    std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
    std::vector<LinkRecord> recs;
    std::vector<std::size_t> stepEndGaps; // the gap after each true step end but the last
};

PipelineSeries pipelineSeries(const sim::SimResult& sim, bool flip = false) {
    std::map<std::string, int> stageOf;
    int stages = 0;
    for (const auto& chain : sim.truth.jobs[0].ppChains)
        for (std::size_t s = 0; s < chain.size(); ++s) stageOf[chain[s]] = int(s), stages = int(chain.size());
    PipelineSeries out;
    std::map<std::pair<std::string, std::string>, std::uint32_t> linkOf;
    FlowTable f = sim.flows;
    f.sortByStart();
    for (std::size_t i = 0; i < f.size(); ++i) {
        const std::string a = f.endpoints.at(f.src[i]).toString(), b = f.endpoints.at(f.dst[i]).toString();
        auto sa = stageOf.find(a), sb = stageOf.find(b);
        if (f.dstPort[i] != kRoceV2Port || sa == stageOf.end() || sb == stageOf.end()) continue;
        const auto [it, added] = linkOf.try_emplace(std::minmax(a, b), std::uint32_t(linkOf.size()));
        const int forward = sb->second > sa->second ? 1 : -1, low = std::min(sa->second, sb->second);
        out.recs.push_back(
            {f.startNs[i], f.end(i), it->second, flip ? -forward : forward, flip ? low == stages - 2 : low == 0});
        if (out.pieces.empty() || f.startNs[i] > out.pieces.back().second)
            out.pieces.push_back({f.startNs[i], f.end(i)});
        else out.pieces.back().second = std::max(out.pieces.back().second, f.end(i));
    }
    const auto& steps = sim.truth.jobs[0].steps;
    for (std::size_t k = 0; k + 1 < steps.size(); ++k)
        for (std::size_t g = 0; g + 1 < out.pieces.size(); ++g)
            if (out.pieces[g + 1].first > steps[k].endNs + 50'000) { // records carry up to 20 µs of skew
                out.stepEndGaps.push_back(g);
                break;
            }
    return out;
}


// The gaps scanDrains finds drained (at least drainedShare at rest, at least 50 µs long).
std::set<std::size_t> drainedGaps(const PipelineSeries& ps) {
    std::set<std::size_t> out;
    const std::vector<double> share = scanDrains(ps.pieces, ps.recs).share;
    for (std::size_t g = 0; g < share.size(); ++g)
        if (share[g] >= StepParams{}.drainedShare && ps.pieces[g + 1].first - ps.pieces[g].second >= 50'000)
            out.insert(g);
    return out;
}

} // namespace

// A simulated configuration's steps all found, none spurious.
static void expectStepsExact(const sim::SimConfig& config) {
    sim::SimResult sim = sim::simulate(config);
    const StepScore s = stepScore(analyzeCapture(captureOf(sim)), sim.truth);
    QVERIFY2(s.exact(), qPrintable(QString("%1 of %2 steps found, %3 spurious")
                                       .arg(s.matched).arg(s.truthSteps).arg(s.spurious())));
}

class TestSteps : public QObject {
    Q_OBJECT

private slots:
    void everyPresetsStepsMatchTheTruth_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        for (const char* p : {"tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies",
                              "pp-anomalies", "reuse", "moe", "moe-ep-lt-dp", "fsdp"})
            for (int seed = 1; seed <= 3; ++seed)
                QTest::newRow(qPrintable(QString("%1 seed %2").arg(p).arg(seed))) << QString(p) << seed;
    }

    // The bar: >= 99.5% of true steps found, none spurious, mean duration error <= 0.1%, max <= 1%.
    void everyPresetsStepsMatchTheTruth() {
        QFETCH(QString, preset);
        QFETCH(int, seed);
        sim::SimResult sim = sim::simulate(presetConfig(qPrintable(preset), seed));
        const StepScore s = stepScore(analyzeCapture(captureOf(sim)), sim.truth);
        QVERIFY2(s.found() >= 0.995, qPrintable(QString("found %1 of %2").arg(s.matched).arg(s.truthSteps)));
        QCOMPARE(s.spurious(), std::size_t(0));
        QVERIFY(s.durationSamples >= s.truthSteps - 1);
        QVERIFY2(s.meanDurationError() <= 0.001, qPrintable(QString::number(s.meanDurationError())));
        QVERIFY2(s.maxDurationError <= 0.01, qPrintable(QString::number(s.maxDurationError)));
    }

    // Steps of jobs without DP traffic come from the pipeline's drains; anomalies must not move them. A 150 ms
    // pause before steps 5-9 of pure-pp used to give ~560 steps (the micro-batch rhythm covered more time than
    // the step rhythm with five irregular steps), a slow stage 590-635. pure-dp, divided by its sync bursts,
    // stays as it was. The findings name the anomaly, its place and steps - except a slow rank of pure-dp,
    // which the network cannot see (ENGINE.md, known limits): its steps are checked only.
    void stepsSurviveAnomaliesWithoutPpOrDp_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("host");
        QTest::addColumn<double>("factor");
        QTest::addColumn<int>("seed");
        for (const char* p : {"pure-pp", "pure-dp"}) {
            for (int seed = 1; seed <= 3; ++seed)
                QTest::newRow(qPrintable(QString("%1 slow_step seed %2").arg(p).arg(seed)))
                    << QString(p) << QString("slow_step") << 0 << 0.0 << seed;
            for (int host = 0; host < 4; ++host) {
                for (double factor : {1.5, 2.0, 3.0})
                    QTest::newRow(qPrintable(QString("%1 slow_rank x%2 hosts[%3]").arg(p).arg(factor).arg(host)))
                        << QString(p) << QString("slow_rank") << host << factor << 1 + host % 3;
                for (double factor : {2.0, 4.0})
                    QTest::newRow(qPrintable(QString("%1 slow_link /%2 hosts[%3]").arg(p).arg(factor).arg(host)))
                        << QString(p) << QString("slow_link") << host << factor << 2 + host % 2;
            }
        }
    }

    void stepsSurviveAnomaliesWithoutPpOrDp() {
        QFETCH(QString, preset);
        QFETCH(QString, kind);
        QFETCH(int, host);
        QFETCH(double, factor);
        QFETCH(int, seed);
        sim::SimResult sim = sim::simulate(withAnomaly(qPrintable(preset), seed, kind.toStdString(), host, factor));
        const Report report = analyzeCapture(captureOf(sim));
        const EvaluationResult ev = evaluate(report, sim.truth);
        const StepScore& s = ev.totals.steps;
        QVERIFY2(s.found() >= 0.995, qPrintable(QString("found %1 of %2").arg(s.matched).arg(s.truthSteps)));
        QCOMPARE(s.spurious(), std::size_t(0));
        QVERIFY2(s.meanDurationError() <= 0.001, qPrintable(QString::number(s.meanDurationError())));
        QVERIFY2(s.maxDurationError <= 0.01, qPrintable(QString::number(s.maxDurationError)));
        if (preset == "pure-dp" && kind == "slow_rank") return;
        QString found;
        for (const Finding& f : report.jobs[0].findings) found += QString::fromStdString(f.message + "\n");
        QVERIFY2(ev.totals.findings.exact(), qPrintable(found));
    }

    // The drain test: on every link activations sent minus gradients returned is back at rest between steps
    // and only there (pp = 4: the head link never rests inside a step), a slow stage included; a transfer the
    // exporter lost entirely is re-levelled at the next drain; taken the wrong way round, no step end drains.
    void aPipelineDrainsExactlyAtItsStepEnds() {
        for (double factor : {1.0, 3.0}) {
            sim::SimResult sim = sim::simulate(withAnomaly("pure-pp", 2, "slow_rank", 2, factor));
            PipelineSeries series = pipelineSeries(sim);
            QCOMPARE(series.stepEndGaps.size(), sim.truth.jobs[0].steps.size() - 1);
            const std::set<std::size_t> ends(series.stepEndGaps.begin(), series.stepEndGaps.end());
            QVERIFY(drainedGaps(series) == ends);
            std::vector<std::size_t> cuts = choosePipelineCuts(series.pieces, series.recs);
            QVERIFY(std::set<std::size_t>(cuts.begin(), cuts.end()) == ends);

            // Lose every record of one gradient on one link in step 3 (both channels).
            const auto& steps = sim.truth.jobs[0].steps;
            const LinkRecord* victim = nullptr;
            for (const LinkRecord& r : series.recs)
                if (r.dir < 0 && r.s > steps[3].startNs + 20'000'000) {
                    victim = &r;
                    break;
                }
            QVERIFY(victim);
            const LinkRecord v = *victim;
            PipelineSeries lossy = series;
            std::erase_if(lossy.recs, [&](const LinkRecord& r) {
                return r.link == v.link && r.dir == v.dir && std::llabs(r.s - v.s) < 5'000;
            });
            QCOMPARE(lossy.recs.size(), series.recs.size() - 2);
            QVERIFY(drainedGaps(lossy) == ends);

            QVERIFY(std::none_of(ends.begin(), ends.end(),
                                 [&, flipped = drainedGaps(pipelineSeries(sim, true))](std::size_t g) {
                                     return flipped.count(g) > 0;
                                 }));
        }
    }

    // Lost records move a link's count either way, and what the link carries next says which. In one step of
    // pure-pp (pp 4 x 8 pipelines), one gradient lost on five of the eight head links left them one deep at
    // the step's end: the end did not drain, no link was re-levelled, and the next step ends failed too
    // (`pp-anomalies`, one channel, 2% lost, seed 42: one step for five). An activation lost on four head
    // links made them rest one gradient early: a drain before the step's last gradient.
    void lostTransfersOnHalfTheHeadLinksMoveNoDrain() {
        sim::SimResult sim = sim::simulate(presetConfig("pure-pp", 3));
        const PipelineSeries series = pipelineSeries(sim);
        const std::set<std::size_t> ends(series.stepEndGaps.begin(), series.stepEndGaps.end());
        const auto& steps = sim.truth.jobs[0].steps;
        std::vector<std::uint32_t> heads;
        for (const LinkRecord& r : series.recs)
            if (r.head && std::find(heads.begin(), heads.end(), r.link) == heads.end()) heads.push_back(r.link);
        QCOMPARE(heads.size(), std::size_t(8));
        QVERIFY(drainedGaps(series) == ends);
        // Loses, on each of `links` head links, its first transfer in direction `dir` past the middle of step 3
        // (every channel's record of it).
        auto lose = [&](std::size_t links, int dir) {
            PipelineSeries lossy = series;
            const std::int64_t from = (steps[3].startNs + steps[3].endNs) / 2;
            for (std::size_t k = 0; k < links; ++k) {
                auto it = std::find_if(lossy.recs.begin(), lossy.recs.end(), [&](const LinkRecord& r) {
                    return r.link == heads[k] && r.dir == dir && r.s > from;
                });
                if (it == lossy.recs.end() || it->s > steps[3].endNs) return PipelineSeries{};
                const LinkRecord v = *it;
                std::erase_if(lossy.recs, [&](const LinkRecord& r) {
                    return r.link == v.link && r.dir == v.dir && std::llabs(r.s - v.s) < 5'000;
                });
            }
            return lossy;
        };
        const PipelineSeries gradients = lose(5, -1), activations = lose(4, 1);
        QVERIFY(!gradients.recs.empty() && !activations.recs.empty());
        QVERIFY(gradients.recs.size() <= series.recs.size() - 5 && activations.recs.size() <= series.recs.size() - 4);
        QVERIFY(drainedGaps(gradients) == ends);
        QVERIFY(drainedGaps(activations) == ends);
        for (const PipelineSeries* ps : {&gradients, &activations}) {
            std::vector<std::size_t> cuts = choosePipelineCuts(ps->pieces, ps->recs);
            QVERIFY(std::set<std::size_t>(cuts.begin(), cuts.end()) == ends);
        }
    }

    // A NIC fallen back to an eighth of its speed stretches its ring's sync to about the length of the forward
    // pass. In a job without a pipeline the rings are cut as one series, so the steps stay exact (cut ring by
    // ring, as few as 16 of the 20 steps were found, with up to 10 spurious ones); factors 2-4 were exact.
    void aVerySlowLinkInAPureDpJobKeepsItsSteps() {
        for (int seed = 1; seed <= 6; ++seed)
            for (double factor : {2.0, 4.0, 8.0}) {
                sim::SimConfig config = presetConfig("pure-dp", seed);
                config.anomalies.clear();
                const auto& nicHost = config.jobs[0].hosts[std::size_t(seed) % config.jobs[0].hosts.size()];
                config.anomalies.push_back({"slow_link", 0, nicHost, config.jobs[0].firstGpu, 3, 6, factor, 0});
                sim::SimResult sim = sim::simulate(config);
                const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
                const StepScore& s = ev.totals.steps;
                QVERIFY2(s.exact(), qPrintable(QString("seed %1, factor %2: found %3 of %4, %5 spurious")
                                                   .arg(seed).arg(factor).arg(s.matched).arg(s.truthSteps)
                                                   .arg(s.spurious())));
                QVERIFY2(s.maxDurationError <= 0.01, qPrintable(QString::number(s.maxDurationError)));
                QCOMPARE(ev.totals.findings.recall(), 1.0); // and the link is found
            }
    }

    // Behind a GPU slowed 3x the stages of a pipeline sync tens of milliseconds apart, and each half of the DP
    // groups formed a round of its own: the slow step was found as two (`tiny`, `two-jobs`). The rounds that
    // complete each other are one step's sync.
    void stagesSyncingFarApartBehindASlowGpuAreOneStep() {
        int slowSteps = 0;
        for (const char* preset : {"tiny", "two-jobs"})
            for (int seed = 1; seed <= 8; ++seed)
                for (double factor : {2.0, 3.0, 4.0}) {
                    sim::SimConfig config = presetConfig(preset, seed);
                    const sim::JobSpec& job = config.jobs[0];
                    const int host = job.hosts[std::size_t(seed) % job.hosts.size()];
                    config.anomalies = {{"slow_rank", 0, host, job.firstGpu + seed % 2, 4, 4 + seed % 2, factor, 0}};
                    sim::SimResult sim = sim::simulate(config);
                    const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
                    const StepScore& s = ev.totals.steps;
                    QVERIFY2(s.exact(), qPrintable(QString("%1 seed %2, factor %3: found %4 of %5, %6 spurious")
                                                       .arg(preset).arg(seed).arg(factor).arg(s.matched)
                                                       .arg(s.truthSteps).arg(s.spurious())));
                    QCOMPARE(ev.totals.findings.recall(), 1.0);
                    slowSteps += 1 + seed % 2;
                }
        QCOMPARE(slowSteps, 72);
    }

    // Transfers whose every record is lost shift their link's count; drains re-level the links, and half
    // the links at rest are enough. One channel per transfer (a lost record is a lost transfer), 2% lost.
    void aPipelineKeepsItsStepsThroughLostTransfers() {
        for (int seed = 1; seed <= 3; ++seed) {
            sim::SimConfig config = presetConfig("pure-pp", seed);
            config.jobs[0].channels = 1;
            config.lossRate = 0.02;
            sim::SimResult sim = sim::simulate(config);
            const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
            QVERIFY(ev.totals.ppChains.exact());
            const StepScore& s = ev.totals.steps;
            QVERIFY2(s.exact(), qPrintable(QString("found %1 of %2, %3 spurious").arg(s.matched).arg(s.truthSteps)
                                               .arg(s.spurious())));
            QVERIFY2(s.maxDurationError <= 0.01, qPrintable(QString::number(s.maxDurationError)));
        }
        // 5% lost: before the drain test read what a link carries next, 3 of 10 seeds kept every step (seed 1
        // found 3 of 20); now one boundary of 200 is lost.
        std::size_t found = 0, truth = 0, spurious = 0;
        for (int seed = 1; seed <= 10; ++seed) {
            sim::SimConfig config = presetConfig("pure-pp", seed);
            config.jobs[0].channels = 1;
            config.lossRate = 0.05;
            sim::SimResult sim = sim::simulate(config);
            const StepScore s = evaluate(analyzeCapture(captureOf(sim)), sim.truth).totals.steps;
            found += s.matched;
            truth += s.truthSteps;
            spurious += s.spurious();
        }
        QVERIFY2(double(found) >= 0.99 * double(truth), qPrintable(QString("found %1 of %2").arg(found).arg(truth)));
        QCOMPARE(spurious, std::size_t(0));
    }

    // An exporter's active timeout cuts a long transfer into pieces; a lost piece leaves a gap one piece long
    // inside it. That is still one transfer; the next transfer, a micro-batch later, is another.
    void aLostActiveTimeoutPieceSplitsNoTransfer() {
        constexpr std::int64_t ms = 1'000'000;
        TransferJoin join;
        QVERIFY(join.startsNew(0, ms));
        QVERIFY(!join.startsNew(ms, 2 * ms));       // the next piece, where the one before was cut
        QVERIFY(!join.startsNew(3 * ms, 4 * ms));   // after a lost piece
        QVERIFY(!join.startsNew(4 * ms, 4 * ms + ms / 3)); // the transfer's short last piece
        QVERIFY(join.startsNew(5 * ms, 6 * ms));    // the next transfer: the piece before it was not cut
        QVERIFY(join.startsNew(9 * ms, 9 * ms + ms)); // three pieces later: no lost piece explains that gap
        // Without a cut seen, a gap as long as a record is two transfers.
        TransferJoin fresh;
        QVERIFY(fresh.startsNew(0, ms));
        QVERIFY(fresh.startsNew(2 * ms, 3 * ms));
    }

    // A two-stage pipeline without DP traffic carries an activation and a gradient a micro-batch on its one
    // link, so its count alternates between one and two in flight and a lost transfer left it off its level for
    // good: drawn configurations lost every step from the first lost gradient on (0 of 21 found), or were
    // oriented the wrong way round. A rest needs stage 0's warm-up next (two activations), the level follows a
    // lost gradient, and the pieces of a long transfer the exporter lost no longer count as transfers.
    void aTwoStagePipelineKeepsItsStepsThroughLostTransfers_data() {
        QTest::addColumn<int>("seed");
        QTest::addColumn<int>("missed"); // at most
        for (int seed : {400229, 400492, 401248, 401680, 401899})
            QTest::addRow("%d", seed) << seed << 0;
        QTest::addRow("401190") << 401190 << 0; // two pauses among the first drains: the turn finds the others
        QTest::addRow("300151") << 300151 << 1; // 2% lost of 13 steps' one-record transfers
        // Two pipelines behind one NIC pair, 400 µs of skew (0 of 36 found once). Since the simulator's expert
        // all-to-all blocks (the replicas, EP 2 inside the hosts, wait for each other at every exchange), 5 of its
        // 36 boundaries are missed: docs/ENGINE.md "Known limits".
        QTest::addRow("100101") << 100101 << 5;
    }
    void aTwoStagePipelineKeepsItsStepsThroughLostTransfers() {
        QFETCH(int, seed);
        QFETCH(int, missed);
        const sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        QCOMPARE(sim.truth.jobs[0].ppChains.front().size(), std::size_t(2));
        const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
        QVERIFY(ev.totals.ppChains.exact());
        const StepScore& s = ev.totals.steps;
        QVERIFY2(s.truthSteps - s.matched <= std::size_t(missed) && s.spurious() == 0,
                 qPrintable(QString("found %1 of %2, %3 spurious").arg(s.matched).arg(s.truthSteps).arg(s.spurious())));
    }

    void stepsAreContiguousAndStepZeroStartsAtTheJobsFirstRecord() {
        sim::SimResult sim = sim::simulate(presetConfig("two-jobs", 4));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        QCOMPARE(a.jobs.size(), a.report.jobs.size());
        for (std::size_t j = 0; j < a.report.jobs.size(); ++j) {
            const auto& steps = a.report.jobs[j].steps;
            QVERIFY(!steps.empty());
            for (std::size_t k = 0; k < steps.size(); ++k) {
                QCOMPARE(steps[k].index, int(k));
                QVERIFY(steps[k].endNs > steps[k].startNs);
                if (k) QCOMPARE(steps[k].startNs, steps[k - 1].endNs);
            }
            // Step 0 starts at the job's first record, in the aligned clock: within the skew bound of it.
            QVERIFY(std::llabs(steps[0].startNs - a.recognition.jobs[j].startNs) <= 40'000);
            QCOMPARE(a.jobs[j].division->source, StepSource::DataParallel);
            QCOMPARE(a.jobs[j].division->firstActivityNs.size(), steps.size());
        }
    }

    // Without DP traffic, a ring of PP pairs (the last stage hands stage 0 its next model chunk; tied embeddings
    // all-reduce between the first and the last stage after the drain) is cut at the pair with the fewest
    // transfers, and the embedding all-reduce after the drain ends no step of its own. Interleaved pipelines
    // without DP, with transfers split over channels and active timeouts, used to give 10-50 steps per true step
    // and thousands of false findings.
    void aPipelineRingIsCutAtItsClosingPairAndTheEmbeddingSyncEndsNoStep_data() {
        QTest::addColumn<int>("chunks");
        QTest::addColumn<int>("channels");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<int>("seed");
        for (int chunks : {2, 4})
            for (int channels : {1, 3})
                for (bool tied : {false, true})
                    QTest::newRow(qPrintable(QString("%1 chunks, %2 channels%3").arg(chunks).arg(channels).arg(
                        tied ? ", tied" : "")))
                        << chunks << channels << tied << 1 + chunks + channels;
    }
    void aPipelineRingIsCutAtItsClosingPairAndTheEmbeddingSyncEndsNoStep() {
        QFETCH(int, chunks);
        QFETCH(int, channels);
        QFETCH(bool, tied);
        QFETCH(int, seed);
        sim::SimConfig config = presetConfig("interleaved-nodp", seed);
        config.activeTimeoutNs = 5'000'000;
        config.lossRate = 0.015;
        sim::JobSpec& j = config.jobs[0];
        j.virtualStages = chunks;
        j.channels = channels;
        j.tiedEmbedding = tied;
        j.microBatches = 4 * j.pp;
        sim::SimResult sim = sim::simulate(config);
        const Report report = analyzeCapture(captureOf(sim));
        const EvaluationResult ev = evaluate(report, sim.truth);
        QVERIFY2(ev.perfect(), ev.toText().c_str());
        const auto& notes = report.jobs[0].notes;
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
            return n.find("the pair with the fewest transfers closes it") != std::string::npos;
        }));
    }

    // Random draws (simulate --random) whose pipelines without DP on the network once came out wrong, kept as
    // regression cases: structure and steps exact (findings are the sweep's). Each names what broke it.
    void randomDrawsWithoutDpTrafficOnceWrongAreExact_data() {
        QTest::addColumn<int>("seed");
        // PP 2, tied embedding: the all-reduce's two halves start together; read gradient first, the level fell
        // one below the rest for good (2 of 35 steps).
        QTest::newRow("100030 pp2 tied") << 100030;
        QTest::newRow("100158 pp2 tied, DP in hosts") << 100158;
        QTest::newRow("100086 pp2 tied, DP in hosts") << 100086;
        // Replicas inside hosts start their warm-ups apart: levels ratcheted up at every micro-batch, and the
        // chains were voted at drains inside steps (7,438 spurious steps; half the chains reversed).
        QTest::newRow("100090 pp3, DP 4 in hosts") << 100090;
        QTest::newRow("100153 pp9, DP 2 in hosts") << 100153;
        // Deep pipelines with even stages: both ways round drain with gaps alike; the count tells (1,222 vs 62).
        QTest::newRow("100117 pp13") << 100117;
        QTest::newRow("100151 pp7") << 100151;
        // Interleaved rings without DP: cut at the closing pair.
        QTest::newRow("100038 pp11, 4 chunks") << 100038;
        QTest::newRow("100005 pp7, 4 chunks, DP in hosts") << 100005;
        // 3 chunks, 1.26% lost on one channel: no step end drains strictly, a lost gradient must be forgiven
        // before the first drain (at the longest gaps), or the chains read reversed (946 spurious steps).
        QTest::newRow("300003 pp6, 3 chunks, loss") << 300003;
        // Exporter clocks 386 us apart: a step's last gradient stamps after the drain; a piece with a head record
        // may open a step (13 spurious steps when only activations could).
        QTest::newRow("100052 pp9, 2 chunks, skew") << 100052;
    }
    void randomDrawsWithoutDpTrafficOnceWrongAreExact() {
        QFETCH(int, seed);
        sim::SimResult sim = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
        const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
        QVERIFY2(ev.perfect(), ev.toText().c_str());
    }

    // ZeRO-3 draws whose optimizer quiet is shorter than a layer group's compute: the longest gaps are the
    // passes', and the steps were cut at every layer group (6-8 steps a step). Found as the period of the gaps.
    void randomZero3DrawsFindTheirStepsAsThePeriod_data() {
        QTest::addColumn<int>("seed");
        QTest::newRow("100016 4 groups, 58 micro-batches, slow rank") << 100016;
        QTest::newRow("100081 4 groups, jitter 0.20") << 100081;
        QTest::newRow("100161 4 groups, 55 micro-batches") << 100161;
        QTest::newRow("100053 3 groups, slow link") << 100053;
        QTest::newRow("100194 3 groups, jitter 0.23") << 100194;
        QTest::newRow("300071 3 groups, optimizer quiet a fifth of a forward gap") << 300071;
        QTest::newRow("300171 4 groups, 1 s records spanning some optimizer quiets") << 300171;
    }
    void randomZero3DrawsFindTheirStepsAsThePeriod() {
        QFETCH(int, seed);
        const sim::SimConfig config = sim::randomConfig(std::uint64_t(seed));
        QVERIFY(config.jobs[0].zero3);
        expectStepsExact(config);
    }

    // Distributed optimizer with the reduce-scatter overlapped with the backward: the buckets come with the
    // backward's compute between them, and where that is as long as half the optimizer's quiet a ring's
    // reduce-scatter and all-gather stay one burst (every step then ended after its all-gather, and a second
    // step end fell at the other stages' reduce-scatters). The other rings' all-gathers start at the same
    // moment and cut it (splitAtOtherOpeners).
    void randomDrawsWithAnOverlappedReduceScatterFindTheirSteps_data() {
        QTest::addColumn<int>("seed");
        QTest::newRow("100070 pp2 dp3, optimizer 0.65 bucket gaps") << 100070;
        QTest::newRow("100072 pp8 dp2") << 100072;
        QTest::newRow("300088 pp5 dp3, slow links") << 300088;
    }
    void randomDrawsWithAnOverlappedReduceScatterFindTheirSteps() {
        QFETCH(int, seed);
        const sim::SimConfig config = sim::randomConfig(std::uint64_t(seed));
        QVERIFY(config.jobs[0].distributedOptimizer && config.jobs[0].overlapGradSync);
        expectStepsExact(config);
    }

    // splitDistributedOptimizer: a reduce-scatter and an all-gather per step, the optimizer's quiet between them
    // 650-890 ms and the compute after the all-gather 1,040-1,240 ms (jittered, 1 micro-batch: random draw 100028
    // cut every step twice): most neighbouring quiets differ by less than 1.5x, yet they alternate. Openers at
    // odd positions. Evenly spaced bursts with gaps jittered 30% (one all-reduce a step) have none.
    void splitDistributedOptimizerFindsOpenersWhereTheQuietsAreClose() {
        const std::int64_t ms = 1'000'000;
        std::mt19937 rng(11);
        std::uniform_real_distribution<double> optimizer(650, 890), compute(1040, 1240), even(700, 1300);
        for (bool alternating : {true, false}) {
            std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
            std::int64_t t = 0;
            for (int k = 0; k < 76; ++k) {
                pieces.push_back({t, t + 38 * ms});
                const double gap = !alternating ? even(rng) : k % 2 == 0 ? optimizer(rng) : compute(rng);
                t += 38 * ms + std::int64_t(gap * double(ms));
            }
            std::vector<std::size_t> cuts;
            for (std::size_t i = 0; i + 1 < pieces.size(); ++i) cuts.push_back(i);
            std::vector<char> opener;
            splitDistributedOptimizer(pieces, cuts, opener, StepParams{});
            if (!alternating) {
                QVERIFY(opener.empty());
                continue;
            }
            QCOMPARE(opener.size(), pieces.size());
            for (std::size_t k = 0; k < opener.size(); ++k) QCOMPARE(opener[k] != 0, k % 2 == 1);
        }
        expectStepsExact(sim::randomConfig(100028));
    }

    // splitAtOtherOpeners: a ring's bursts [four buckets, quiet, all-gather] are split where other rings'
    // all-gathers began (within the window, after a quiet gap), the all-gather part an opener; a burst that
    // starts there is an opener whole; a piece near a start but right after the one before is not cut; a single
    // match is no evidence.
    void splitAtOtherOpenersCutsWhereTheOtherRingsGather() {
        const std::int64_t ms = 1'000'000;
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::vector<std::size_t> cuts;
        std::vector<std::int64_t> starts;
        for (int step = 0; step < 4; ++step) {
            const std::int64_t t = step * 200 * ms;
            for (int b = 0; b < 4; ++b) pieces.push_back({t + b * ms, t + b * ms + ms / 2});
            pieces.push_back({t + 5 * ms, t + 7 * ms}); // the all-gather, 1.5 ms after the last bucket
            starts.push_back(t + 5 * ms + 20'000);     // another ring's, 20 us later on its clock
            cuts.push_back(pieces.size() - 1);
        }
        cuts.pop_back();
        std::vector<char> opener;
        std::vector<std::size_t> split = cuts;
        splitAtOtherOpeners(pieces, split, opener, starts, 550'000, StepParams{});
        QCOMPARE(opener.size(), std::size_t(8));
        QCOMPARE(split.size(), std::size_t(7));
        for (std::size_t k = 0; k < 8; ++k) {
            QCOMPARE(opener[k] != 0, k % 2 == 1);
            if (k < 7) QCOMPARE(split[k], k % 2 == 0 ? 5 * (k / 2) + 3 : 5 * (k / 2) + 4);
        }
        // Starts near the buckets (0.5 ms apart, so no quiet gap of a boundary's length before them)
        opener.clear();
        split = cuts;
        std::vector<std::int64_t> nearBuckets{ms + 10'000, 201 * ms + 10'000};
        StepParams strict;
        strict.minBoundaryGapNs = ms;
        splitAtOtherOpeners(pieces, split, opener, nearBuckets, 550'000, strict);
        QVERIFY(opener.empty());
        QCOMPARE(split, cuts);
        std::vector<std::int64_t> one{5 * ms};
        splitAtOtherOpeners(pieces, split, opener, one, 550'000, StepParams{});
        QVERIFY(opener.empty());
    }

    // choosePeriodicCuts: steps of six round pieces (three layer groups: the forward's gaps 100 ms, the
    // backward's 200 ms, each jittered up to 20%), the step's last reduce-scatter joined to the next step's
    // gathers (a 3-unit piece) by a short optimizer quiet. Cut in every such piece, also through four steps
    // slowed 2.3x and where a 600 ms pause before a step parts the joined piece (cut before the gathers, at
    // the pause). Steps of one burst with a pause every fifth (a pure-DP job's checkpoints), or gaps at random,
    // have no period.
    void choosePeriodicCutsFindsTheStepAsThePeriodOfTheGaps() {
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> jitter(1.0, 1.2);
        const std::int64_t ms = 1'000'000;
        std::int64_t t = 0;
        std::vector<std::size_t> expected;
        std::size_t pauseCut = 0;
        for (int step = 0; step < 20; ++step) {
            const double slow = step >= 8 && step < 12 ? 2.3 : 1.0;
            const std::int64_t spans[6] = {3 * ms, ms, ms, ms, 2 * ms, 2 * ms};
            for (int k = 0; k < 6; ++k) {
                if (k == 0 && step == 15) { // the pause parts the scatter from the gathers
                    pieces.push_back({t, t + ms});
                    t += ms + 600 * ms;
                    pauseCut = pieces.size();
                    pieces.push_back({t, t + 2 * ms});
                    t += 2 * ms;
                } else {
                    if (k == 0 && step > 0) expected.push_back(pieces.size());
                    pieces.push_back({t, t + spans[k]});
                    t += spans[k];
                }
                t += std::int64_t(double(k < 3 ? 100 * ms : 200 * ms) * slow * jitter(rng));
            }
        }
        const std::vector<PeriodicCut> cuts = choosePeriodicCuts(pieces);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0, e = 0; i < cuts.size(); ++i) {
            if (cuts[i].piece == pauseCut) {
                QVERIFY(cuts[i].atStart);
                continue;
            }
            QCOMPARE(cuts[i].piece, expected[e++]);
            QVERIFY(!cuts[i].atStart);
        }

        std::vector<std::pair<std::int64_t, std::int64_t>> steps, noise;
        t = 0;
        for (int step = 0; step < 60; ++step) {
            if (step % 5 == 0) t += 400 * ms;
            steps.push_back({t, t + ms});
            t += std::int64_t(45.0 * double(ms) * jitter(rng));
        }
        QVERIFY(choosePeriodicCuts(steps).empty());
        std::uniform_real_distribution<double> any(1.0, 4.0);
        t = 0;
        for (int k = 0; k < 200; ++k) {
            noise.push_back({t, t + ms});
            t += std::int64_t(double(ms) * 50 * any(rng));
        }
        QVERIFY(choosePeriodicCuts(noise).empty());
    }

    // choosePeriodicCuts where the optimizer's quiet (10 ms) is far shorter than the forward's gaps (40 ms),
    // those shorter than the backward's (80 ms), each jittered up to 30%: halfway between the shortest and the
    // longest gap would count the forward's as long. A step of seven pieces (gathers, three forward gathers,
    // the backward's gathers and scatters, its last scatter), and every fifth step's last scatter joined to the
    // next step's gathers by a record spanning the optimizer's quiet (an active timeout): from there on every
    // gap is a phase off. Cut at each last scatter, and at each joined piece (the step ends inside it).
    void choosePeriodicCutsFollowsAStepOfThreeGapLengthsThroughJoinedPieces() {
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::mt19937 rng(11);
        std::uniform_real_distribution<double> jitter(1.0, 1.3);
        const std::int64_t ms = 1'000'000;
        const std::int64_t spans[7] = {2 * ms, ms, ms, ms, 2 * ms, ms, ms};
        const std::int64_t gaps[7] = {40 * ms, 40 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms, 10 * ms};
        std::int64_t t = 0;
        std::vector<std::size_t> expected;
        for (int step = 0; step < 30; ++step)
            for (int k = 0; k < 7; ++k) {
                const bool joined = k == 0 && step > 0 && step % 5 == 0; // into the previous step's last scatter
                if (joined) {
                    pieces.back().second = t + spans[k];
                } else {
                    if (k == 6 && step < 29) expected.push_back(pieces.size()); // joined or not
                    pieces.push_back({t, t + spans[k]});
                }
                t += spans[k] + std::int64_t(double(gaps[k]) * jitter(rng));
            }
        const std::vector<PeriodicCut> cuts = choosePeriodicCuts(pieces);
        std::vector<std::size_t> found;
        for (const PeriodicCut& c : cuts) {
            QVERIFY(!c.atStart);
            found.push_back(c.piece);
        }
        QCOMPARE(found, expected);
    }

    void aJobWithoutDpTrafficIsDividedByItsPipelineRhythm() {
        sim::SimResult sim = sim::simulate(presetConfig("pure-pp", 2));
        Analysis a = runAnalysis(captureOf(sim));
        QCOMPARE(a.jobs.size(), std::size_t(1));
        QCOMPARE(a.jobs[0].division->source, StepSource::Pipeline);
        const StepScore s = stepScore(a.report, sim.truth);
        QVERIFY(s.exact());
        const auto& notes = a.report.jobs[0].notes;
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
            return n.find("pipeline traffic rhythm") != std::string::npos;
        }));
    }

    // Exporters stamp records with their leaf's clock (±20 µs here). Aligned, every step end is off from the
    // truth by the same amount (the reference clock), so durations keep their accuracy; unaligned, the offset
    // follows whichever leaf exported the last record.
    void exporterClockSkewIsAlignedPerLeaf() {
        std::int64_t alignedSpread = 0, rawSpread = 0;
        for (int seed = 1; seed <= 3; ++seed) {
            sim::SimResult sim = sim::simulate(presetConfig("pure-dp", seed));
            Capture c = captureOf(sim);
            for (bool align : {true, false}) {
                AnalysisOptions o;
                o.steps.alignClocks = align;
                Analysis a = runAnalysis(c, o);
                QCOMPARE(a.report.jobs[0].steps.size(), sim.truth.jobs[0].steps.size());
                std::int64_t lo = INT64_MAX, hi = INT64_MIN;
                for (std::size_t k = 0; k < a.report.jobs[0].steps.size(); ++k) {
                    const std::int64_t d = a.report.jobs[0].steps[k].endNs - sim.truth.jobs[0].steps[k].endNs;
                    lo = std::min(lo, d);
                    hi = std::max(hi, d);
                }
                (align ? alignedSpread : rawSpread) = std::max(align ? alignedSpread : rawSpread, hi - lo);
                QCOMPARE(a.jobs[0].division->clockOffsetNs.empty(), !align);
            }
        }
        QVERIFY2(alignedSpread <= 5'000, qPrintable(QString::number(alignedSpread)));
        QVERIFY2(rawSpread > alignedSpread, qPrintable(QString("%1 vs %2").arg(rawSpread).arg(alignedSpread)));
    }

    void withoutSkewNoClockIsMoved() {
        sim::SimConfig config = presetConfig("tiny", 2);
        config.maxSkewNs = 0;
        sim::SimResult sim = sim::simulate(config);
        Analysis a = runAnalysis(captureOf(sim));
        for (std::int64_t off : a.jobs[0].division->clockOffsetNs) QVERIFY(std::llabs(off) <= 2'000);
        QVERIFY(stepScore(a.report, sim.truth).exact());
    }

    // A capture that ends inside a step: the partial step is not reported, and a note says so.
    void aCaptureThatEndsMidStepDropsThePartialStep() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 3));
        const auto& truth = sim.truth.jobs[0].steps;
        const std::int64_t cut = (truth[10].startNs + truth[10].endNs) / 2;
        Capture c = captureOf(window(sim.flows, INT64_MIN, cut), sim.topology);
        Analysis a = runAnalysis(c);
        QCOMPARE(a.report.jobs.size(), std::size_t(1));
        const auto& steps = a.report.jobs[0].steps;
        QCOMPARE(steps.size(), std::size_t(10));
        for (std::size_t k = 0; k < steps.size(); ++k) QVERIFY(std::llabs(steps[k].endNs - truth[k].endNs) < 50'000);
        QVERIFY(a.jobs[0].division->lastStepCut);
        const auto& notes = a.report.jobs[0].notes;
        QVERIFY(std::any_of(notes.begin(), notes.end(),
                            [](const std::string& n) { return n.find("does not finish") != std::string::npos; }));
    }

    // A capture that starts inside a step: step 0 is what is left of it, flagged, and the others are whole.
    void aCaptureThatStartsMidStepFlagsStepZero() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 3));
        const auto& truth = sim.truth.jobs[0].steps;
        const std::int64_t cut = (truth[4].startNs + truth[4].endNs) / 2;
        Capture c = captureOf(window(sim.flows, cut, INT64_MAX), sim.topology);
        Analysis a = runAnalysis(c);
        QCOMPARE(a.report.jobs.size(), std::size_t(1));
        const auto& steps = a.report.jobs[0].steps;
        QCOMPARE(steps.size(), truth.size() - 4);
        QVERIFY(a.jobs[0].division->firstStepCut);
        QVERIFY(steps[0].durationNs() < truth[4].durationNs());
        for (std::size_t k = 1; k < steps.size(); ++k) {
            const double err = std::fabs(double(steps[k].durationNs() - truth[k + 4].durationNs())) /
                               double(truth[k + 4].durationNs());
            QVERIFY(err < 0.001);
        }
        // Partial step 0 is left out of the slow-step statistics: no finding on a clean job.
        QVERIFY(a.report.jobs[0].findings.empty());
    }

    // The same without DP traffic: a capture that ends while micro-batches are still in flight has no drain
    // after its last record, so that step is not reported; one that starts mid-step reaches the resting level
    // at the first drain, and step 0 is what is left of its step.
    void aPipelineCaptureCutMidStepKeepsWholeSteps() {
        sim::SimResult sim = sim::simulate(presetConfig("pure-pp", 2));
        const auto& truth = sim.truth.jobs[0].steps;
        for (double at : {0.1, 0.5, 0.9}) {
            const std::int64_t cut = truth[10].startNs + std::int64_t(at * double(truth[10].durationNs()));
            Analysis head = runAnalysis(captureOf(window(sim.flows, INT64_MIN, cut), sim.topology));
            QCOMPARE(head.report.jobs.size(), std::size_t(1));
            QCOMPARE(head.report.jobs[0].steps.size(), std::size_t(10));
            for (std::size_t k = 0; k < 10; ++k)
                QVERIFY(std::llabs(head.report.jobs[0].steps[k].endNs - truth[k].endNs) < 50'000);
            QCOMPARE(head.jobs[0].division->lastStepCut, at > 0.15); // 0.1: the capture ends in the quiet gap

            Analysis tail = runAnalysis(captureOf(window(sim.flows, cut, INT64_MAX), sim.topology));
            const auto& steps = tail.report.jobs[0].steps;
            QCOMPARE(steps.size(), truth.size() - 10);
            QCOMPARE(tail.jobs[0].division->firstStepCut, at > 0.15); // 0.1: in the quiet gap before the step
            for (std::size_t k = 0; k < steps.size(); ++k)
                QVERIFY(std::llabs(steps[k].endNs - truth[k + 10].endNs) < 50'000);
            QVERIFY(tail.report.jobs[0].findings.empty());
        }
    }

    // Periodic job-wide pauses (checkpoints) make some quiet gaps much longer than the others; the steps
    // between them must still be found one by one.
    void periodicPausesDoNotMergeSteps() {
        sim::SimConfig config = presetConfig("tiny", 5);
        config.jobs[0].steps = 30;
        for (int s : {5, 10, 15, 20, 25}) config.anomalies.push_back({"slow_step", 0, 0, 0, s, s, 0.0, 40'000'000});
        sim::SimResult sim = sim::simulate(config);
        QVERIFY(stepScore(analyzeCapture(captureOf(sim)), sim.truth).exact());
    }

    // BOCD on the step intervals marks where the rhythm changes.
    void aLastingSlowdownIsAChangePoint() {
        sim::SimConfig config = presetConfig("tiny", 1);
        config.jobs[0].steps = 30;
        config.anomalies.push_back({"slow_rank", 0, config.jobs[0].hosts[1], 0, 12, 29, 1.5, 0});
        Analysis a = runAnalysis(captureOf(sim::simulate(config)));
        const auto& cps = a.jobs[0].division->changePoints;
        QVERIFY(std::any_of(cps.begin(), cps.end(), [](std::size_t c) { return c >= 11 && c <= 13; }));
        QCOMPARE(a.jobs[0].division->changeProbability.size(), a.report.jobs[0].steps.size());
        QVERIFY(a.jobs[0].division->changeProbability[12] > 0.95);

        Analysis clean = runAnalysis(captureOf(sim::simulate(presetConfig("tiny", 1))));
        QVERIFY(clean.jobs[0].division->changePoints.empty());
    }

    // A step found near the last one (lowerBoundNear) is std::lower_bound's answer from any starting guess: on
    // sorted ends with ties, values before, between, on and after them, guesses anywhere (past the end too).
    void aStepFoundNearTheLastOneIsTheBinarySearchs() {
        std::mt19937_64 rng(5);
        for (int round = 0; round < 300; ++round) {
            std::vector<std::int64_t> ends(rng() % 12);
            for (std::int64_t& e : ends) e = std::int64_t(rng() % 40);
            std::sort(ends.begin(), ends.end());
            for (std::int64_t v = -2; v <= 42; ++v)
                for (std::size_t near = 0; near <= ends.size() + 2; ++near) {
                    const auto want = std::size_t(std::lower_bound(ends.begin(), ends.end(), v) - ends.begin());
                    if (lowerBoundNear(ends, v, near) != want)
                        QFAIL(qPrintable(QString("value %1 from %2 among %3 ends: %4, lower_bound %5")
                                             .arg(v)
                                             .arg(near)
                                             .arg(ends.size())
                                             .arg(lowerBoundNear(ends, v, near))
                                             .arg(want)));
                }
        }
    }

    void chooseCutsFindsTheRhythmOfBursts() {
        // Bursts of three 100 µs pieces 20 µs apart, every 1 ms, and a 3 ms pause before the 6th burst.
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::int64_t t = 0;
        for (int b = 0; b < 10; ++b) {
            if (b == 5) t += 3'000'000;
            for (int i = 0; i < 3; ++i) pieces.push_back({t + i * 120'000, t + i * 120'000 + 100'000});
            t += 1'000'000;
        }
        for (double exponent : {0.5, 1.0}) {
            const auto cuts = chooseCuts(pieces, {}, exponent);
            QCOMPARE(cuts.size(), std::size_t(9));
            for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 3 * i + 2);
        }
        // One burst (its gaps are below the 50 µs a step boundary needs): nothing to cut; no pieces: nothing.
        QVERIFY(chooseCuts({{0, 100'000}, {120'000, 220'000}, {240'000, 340'000}}).empty());
        QVERIFY(chooseCuts({}).empty());
    }

    // Sync bursts of steps of three lengths, none a majority (5 at 114 ms, 4 at 202 ms, 10 at 52 ms; the gaps
    // of `stepsOfThreeLengthsNoneAMajorityAreAllFound`), each burst two pieces 10 µs apart: the rhythm alone
    // cut only the 10 longest gaps (a weak 1.4x drop); with clearGapWins every gap between bursts (>= 50 ms,
    // thousands of times the gaps inside them) is cut. A strong separation stays: bursts whose buckets are
    // 2 ms apart inside a 50 ms step are not split into buckets.
    void aClearGapWinsOverAWeakRhythmInSyncBursts() {
        // The quiet gaps between one DP group's sync bursts in that capture (ms, in time order).
        const std::vector<double> gapsMs = {113.2, 112.8, 112.5, 112.1, 92.1, 52.4, 72.1, 200.9, 200.7, 200.7,
                                            200.5, 52.4, 52.3, 52.1, 51.9, 50.6, 50.6, 50.6, 50.3};
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::int64_t t = 0;
        for (std::size_t b = 0; b <= gapsMs.size(); ++b) {
            pieces.push_back({t, t + 1'000'000});
            pieces.push_back({t + 1'010'000, t + 1'500'000});
            t += 1'500'000 + (b < gapsMs.size() ? std::llround(gapsMs[b] * 1e6) : 0);
        }
        QVERIFY(chooseCuts(pieces, {}, 0.5).size() < gapsMs.size()); // the weak rhythm
        const auto cuts = chooseCuts(pieces, {}, 0.5, false, true);
        QCOMPARE(cuts.size(), gapsMs.size());
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 2 * i + 1);

        // 20 regular steps of 50 ms whose bursts are four buckets 2 ms apart: the rhythm's cut (gaps of ~40 ms
        // against 2 ms, 20x) is the true one and stays.
        pieces.clear();
        t = 0;
        for (int b = 0; b < 20; ++b) {
            t += 40'000'000;
            for (int i = 0; i < 4; ++i) pieces.push_back({t + i * 2'500'000, t + i * 2'500'000 + 500'000});
            t += 10'000'000;
        }
        const auto bucketed = chooseCuts(pieces, {}, 0.5, false, true);
        QCOMPARE(bucketed.size(), std::size_t(19));
        for (std::size_t i = 0; i < bucketed.size(); ++i) QCOMPARE(bucketed[i], 4 * i + 3);
    }

    // Three regimes, none a majority, end to end: a GPU 3x slow for steps 1-5, a pause before steps 9-12 and
    // a slow link in 14-18 (`tiny`, 20 steps; 11 were found, 9 merged into their neighbours).
    void stepsOfThreeLengthsNoneAMajorityAreAllFound() {
        for (int seed = 1; seed <= 6; ++seed) {
            sim::SimConfig config = presetConfig("tiny", seed);
            const sim::JobSpec& job = config.jobs[0];
            config.anomalies = {{"slow_rank", 0, job.hosts[0], job.firstGpu, 1, 5, 3.0, 0},
                                {"slow_step", 0, 0, 0, 9, 12, 0.0, 150'000'000},
                                {"slow_link", 0, job.hosts[1], job.firstGpu + 1, 14, 18, 2.0, 0}};
            sim::SimResult sim = sim::simulate(config);
            const EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
            const StepScore& s = ev.totals.steps;
            QVERIFY2(s.exact(), qPrintable(QString("seed %1: found %2 of %3, %4 spurious").arg(seed).arg(s.matched)
                                               .arg(s.truthSteps).arg(s.spurious())));
        }
    }

    // Pauses much longer than a step: measured end to end, the steps around them are irregular and cutting at
    // the pauses alone covers more time; measured by their activity (the quiet gap left out), every step is
    // regular again and each is cut (the pipeline path measures steps so).
    void activeSpansKeepStepsAroundLongPauses() {
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::int64_t t = 0;
        for (int b = 0; b < 20; ++b) {
            if (b == 5 || b == 10 || b == 15) t += 20'000'000;
            pieces.push_back({t, t + 900'000});
            t += 1'000'000;
        }
        QCOMPARE(chooseCuts(pieces, {}, 1.0).size(), std::size_t(3));
        const auto cuts = chooseCuts(pieces, {}, 1.0, true);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], i);
    }

    // DP traffic all through the step (expert all-to-all in every forward and backward, ZeRO-3 gathers and
    // reduce-scatters per layer group): its bursts have the passes' rhythm (~250-340 found for 20 steps before),
    // the steps the coarser rhythm of the optimizer's job-wide quiet. The pipelines are oriented by the nodes'
    // sync ends, not by the all-to-all bursts mid-step (chains were all reversed on moe), and nothing is found
    // on these clean runs. Jobs with one sync per step keep their steps and get no such note. With experts
    // the exchanges are told from the ring's hops (by direction with EP < DP, by fan-out with EP = DP) and the
    // ring gives the steps: the note says so instead.
    void dpTrafficAllThroughTheStepEndsStepsAtTheOptimizersQuiet() {
        auto noted = [](const Report& r, const char* text) {
            const auto& notes = r.jobs.at(0).notes;
            return std::any_of(notes.begin(), notes.end(),
                               [&](const std::string& n) { return n.find(text) != std::string::npos; });
        };
        auto hasNote = [&](const Report& r) { return noted(r, "runs all through each step"); };
        auto toldApart = [&](const Report& r) { return noted(r, "is told from the gradient sync"); };
        // (moe seed 13: in 7 of its 20 steps a ring's last chunks opened a round with the next step's first
        // exchanges, which hid the optimizer's quiet inside that round, while the exchanges were in the series.)
        for (const char* preset : {"moe", "moe-ep-lt-dp", "fsdp"})
            for (int seed : {1, 2, 3, 13}) {
                sim::SimResult sim = sim::simulate(presetConfig(preset, seed));
                const Report report = analyzeCapture(captureOf(sim));
                const EvaluationResult ev = evaluate(report, sim.truth);
                const QString what = QString("%1 seed %2").arg(preset).arg(seed);
                QVERIFY2(ev.totals.steps.exact(), qPrintable(what + "\n" + QString::fromStdString(ev.toText())));
                QVERIFY2(ev.totals.ppChains.exact(), qPrintable(what));
                QVERIFY2(ev.totals.findings.exact(), qPrintable(what + "\n" + QString::fromStdString(ev.toText())));
                const bool split = std::string(preset) != "fsdp";
                QVERIFY2(hasNote(report) != split, qPrintable(what));
                QVERIFY2(toldApart(report) == split, qPrintable(what));
            }
        for (const char* preset : {"tiny", "zero1", "checkpoints"}) {
            const Report report = analyzeCapture(captureOf(sim::simulate(presetConfig(preset, 1))));
            QVERIFY2(!hasNote(report) && !toldApart(report), preset);
        }
    }

    // chooseCoarseCuts on bursts: five per step at the pace of forward and backward passes (1, 1, 2, 2, 2 ms
    // apart) with a longer quiet after each step's last (the optimizer) is cut after every fifth; steps of one
    // burst each, alike, with a long pause every tenth step (checkpoints), are not cut coarser, however long
    // the pause; one burst per step alone gives nothing either.
    void chooseCoarseCutsFindsTheStepOverAnInnerRhythm() {
        std::vector<std::pair<std::int64_t, std::int64_t>> inner;
        std::int64_t t = 0;
        const std::int64_t pace[5] = {1'000'000, 1'000'000, 2'000'000, 2'000'000, 2'000'000};
        for (int step = 0; step < 20; ++step) {
            for (int b = 0; b < 5; ++b) {
                inner.push_back({t, t + 300'000});
                t += pace[b] + (step * 7 + b * 13) % 5 * 20'000; // a little jitter
            }
            t += 3'000'000; // the optimizer
        }
        const auto cuts = chooseCoarseCuts(inner);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 5 * i + 4);

        for (std::int64_t pause : {std::int64_t(20'000'000), std::int64_t(2'000'000'000)}) {
            std::vector<std::pair<std::int64_t, std::int64_t>> steps;
            t = 0;
            for (int step = 0; step < 60; ++step) {
                if (step % 10 == 0) t += pause;
                steps.push_back({t, t + 1'000'000});
                t += 45'000'000 + (step * 37) % 11 * 100'000;
            }
            QVERIFY(chooseCoarseCuts(steps).empty());
        }
    }

    // The step rhythm over an inner rhythm holds when anomalies change the times: a pause (50 ms, far longer
    // than the optimizer's 3 ms quiet) before each of five steps in a row and a slow link that stretches
    // three steps' bursts 8x still give one cut per step. And when a step's first pass comes as one long
    // burst (an FSDP forward's gathers merged, 18 ms) and its others evenly (the backward's, 4 ms apart), the
    // intervals inside the steps are alike but the long opening burst says they are steps, not pauses.
    void chooseCoarseCutsKeepsTheStepsThroughPausesAndSlowSteps() {
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::int64_t t = 0;
        const std::int64_t pace[5] = {1'000'000, 1'000'000, 2'000'000, 2'000'000, 2'000'000};
        for (int step = 0; step < 20; ++step) {
            if (step >= 4 && step < 9) t += 50'000'000;
            const std::int64_t stretch = step >= 14 && step < 17 ? 8 : 1;
            for (int b = 0; b < 5; ++b) {
                pieces.push_back({t, t + 300'000 * stretch});
                t += 300'000 * stretch + pace[b] + (step * 7 + b * 13) % 5 * 20'000;
            }
            t += 3'000'000;
        }
        auto cuts = chooseCoarseCuts(pieces);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 5 * i + 4);

        pieces.clear();
        t = 0;
        for (int step = 0; step < 20; ++step) {
            pieces.push_back({t, t + 18'000'000});
            t += 18'000'000;
            for (int b = 0; b < 8; ++b) {
                t += 2'000'000 + (step * 7 + b * 13) % 5 * 20'000;
                pieces.push_back({t, t + 2'000'000});
                t += 2'000'000;
            }
            t += 5'000'000;
        }
        cuts = chooseCoarseCuts(pieces);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 9 * i + 8);
    }

    // A GPU slow among expert-parallel peers stretches the quiet between its step's exchanges to that of the
    // optimizer (3.1-3.3 ms against 3.0-3.4 ms): the division at the longest gaps cuts those steps into
    // fragments of one or two pieces. Two such steps in a row and one alone come back whole (fragments of equal
    // pattern, grouped per step), and the usual steps keep their cuts. Two usual steps without the quiet
    // between them are no fragments of one.
    void stepsCutApartByASlowGpuArePutBackTogether() {
        const std::int64_t ms = 1'000'000;
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::vector<std::size_t> ends; // the last piece of each step
        std::int64_t t = 0;
        const std::int64_t usualGap[4] = {500'000, 1'500'000, 500'000, 1'500'000};
        const std::int64_t slowGap[4] = {2 * ms, 3'300'000, 2'600'000, 3'100'000};
        for (int step = 0; step < 20; ++step) {
            const bool slow = step == 6 || step == 7 || step == 13;
            for (int b = 0; b < 5; ++b) {
                pieces.push_back({t, t + ms});
                t += ms;
                if (b < 4) t += slow ? slowGap[b] : usualGap[b] + (step * 7 + b * 13) % 5 * 20'000;
            }
            ends.push_back(pieces.size() - 1);
            t += 3 * ms + (step * 11) % 5 * 100'000;
        }
        auto cuts = chooseCoarseCuts(pieces);
        ends.pop_back();
        QCOMPARE(cuts, ends);

        // Steps 4 and 5, 10 and 11 ran into each other (no quiet between them): ten pieces, not fragments.
        pieces.clear();
        ends.clear();
        t = 0;
        for (int step = 0; step < 20; ++step) {
            for (int b = 0; b < 5; ++b) {
                pieces.push_back({t, t + ms});
                t += ms;
                if (b < 4) t += usualGap[b] + (step * 7 + b * 13) % 5 * 20'000;
            }
            const bool joined = step == 4 || step == 10;
            if (!joined) ends.push_back(pieces.size() - 1);
            t += joined ? usualGap[1] : 3 * ms + (step * 11) % 5 * 100'000;
        }
        cuts = chooseCoarseCuts(pieces);
        ends.pop_back();
        QCOMPARE(cuts, ends);
    }

    // With EP < DP each EP group runs on its own clock; a slow GPU (2x) and a slow link (4x) in one job
    // made the usual gap between bursts 2.2 ms instead of 1.7, and the rounds formed on it two per step:
    // every step was found as two (46 + 7 ms). With the exchanges told from the ring the steps are the
    // ring's syncs. Clean runs of either MoE preset keep their division.
    void expertSubgroupsOnTheirOwnClocksKeepTheirSteps() {
        sim::SimConfig config = presetConfig("moe-ep-lt-dp", 9);
        config.anomalies.clear();
        int index = 0;
        for (const char* spec : {"slow_rank:steps=8-11,factor=2.0", "slow_link:steps=2-3,factor=4"})
            config.anomalies.push_back(sim::parseAnomaly(spec, config, 9, index++));
        sim::SimResult sim = sim::simulate(config);
        EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
        QVERIFY2(ev.totals.steps.exact(), qPrintable(QString::fromStdString(ev.toText())));
        for (const char* preset : {"moe", "moe-ep-lt-dp"}) {
            sim = sim::simulate(presetConfig(preset, 9));
            ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
            QVERIFY2(ev.totals.steps.exact(), preset);
        }
    }

    // EP < DP: the ring's one-way hops give the sync. An 8x slow link in one ring makes its hops wait between
    // buckets for the slowest one, and the ring's rhythm cuts its sync in two in 2 of its 5 slowed steps; the
    // repeat then opened a round mid-step, and every later round held the end of one step and the start of
    // the next (10 of 20 steps found). And a hop's last piece lost on a one-way pair leaves its twin on the EP
    // pair to end the sync (a step 1 ms short otherwise). Steps exact within 0.1%, the exchanges told apart.
    void aSyncCutInTwoOpensNoRound() {
        sim::SimConfig config = presetConfig("moe-ep-lt-dp", 6);
        config.anomalies.clear();
        int index = 0;
        for (const char* spec : {"slow_rank:steps=14-18,factor=2.0", "slow_link:steps=2-6,factor=8",
                                 "slow_step:steps=8-11,pause_ms=40"})
            config.anomalies.push_back(sim::parseAnomaly(spec, config, 6, index++));
        sim::SimResult sim = sim::simulate(config);
        Analysis a = runAnalysis(captureOf(sim));
        EvaluationResult ev = evaluate(a.report, sim.truth);
        QVERIFY2(ev.totals.steps.exact(), qPrintable(QString::fromStdString(ev.toText())));
        QVERIFY2(ev.totals.steps.maxDurationError < 0.001, qPrintable(QString::fromStdString(ev.toText())));
        QVERIFY(!a.jobs[0].division->expertPairs.empty());
        QVERIFY(ev.totals.findings.exact());
    }

    // A distributed optimizer's all-gather cut in two by a lost record between its buckets (one channel, 2%
    // lost): the part before is no reduce-scatter, no step ends there (megatron-8 seed 29 had a 2.6 ms step 0).
    // The same on more seeds of the same variant: exact.
    void anAllGatherCutInTwoEndsNoStep() {
        for (int seed : {29, 3, 11}) {
            sim::SimConfig config = presetConfig("megatron-8", seed);
            for (auto& j : config.jobs) j.channels = 1;
            config.lossRate = 0.02;
            sim::SimResult sim = sim::simulate(config);
            EvaluationResult ev = evaluate(analyzeCapture(captureOf(sim)), sim.truth);
            QVERIFY2(ev.totals.steps.exact(), qPrintable(QString("seed %1\n%2").arg(seed).arg(QString::fromStdString(ev.toText()))));
        }
    }

    // One sync per step (two pieces, 20 us apart) and a step time of 63 ms, but 7 steps slowed (75-150 ms)
    // and a 400 ms pause before each of 5 steps in a row: only 8 steps are usual, and the pauses alone are a
    // more regular rhythm. They hold the syncs unevenly (13 in the first step, one in each other): one cut
    // per step stands.
    void aRhythmOfPausesInARowDoesNotHideTheSteps() {
        const std::int64_t ms = 1'000'000;
        const std::int64_t len[20] = {63, 63, 63, 63, 75, 74, 63, 63, 149, 150, 150, 150, 150,
                                      463, 463, 463, 463, 463, 63, 63};
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        std::int64_t t = 0;
        for (int k = 0; k < 20; ++k) {
            t += len[k] * ms - 5 * ms; // compute (and pause), quiet on the network
            pieces.push_back({t, t + 2 * ms});
            pieces.push_back({t + 2 * ms + 20'000, t + 5 * ms});
            t += 5 * ms;
        }
        const auto cuts = chooseCuts(pieces, StepParams{}, 0.5, false, true);
        QCOMPARE(cuts.size(), std::size_t(19));
        for (std::size_t i = 0; i < cuts.size(); ++i) QCOMPARE(cuts[i], 2 * i + 1);
    }

    // A capture that ends inside a step of DP traffic all through the step: the rounds after the last
    // optimizer quiet are shorter than a step and are not reported; the steps before are whole. One that
    // starts inside a step: step 0 is what is left of it, the others are whole, and nothing is found.
    void aCoarseStepCutShortByTheCaptureIsNotReported() {
        for (const char* preset : {"moe", "fsdp"}) {
            sim::SimResult sim = sim::simulate(presetConfig(preset, 2));
            const auto& truth = sim.truth.jobs[0].steps;
            const std::int64_t cut = (truth[10].startNs + truth[10].endNs) / 2;
            Analysis a = runAnalysis(captureOf(window(sim.flows, INT64_MIN, cut), sim.topology));
            QCOMPARE(a.report.jobs.size(), std::size_t(1));
            const auto& steps = a.report.jobs[0].steps;
            QCOMPARE(steps.size(), std::size_t(10));
            for (std::size_t k = 0; k < steps.size(); ++k)
                QVERIFY(std::llabs(steps[k].endNs - truth[k].endNs) < 50'000);
            QVERIFY2(a.jobs[0].division->lastStepCut, preset);

            const std::int64_t from = (truth[4].startNs + truth[4].endNs) / 2;
            Analysis tail = runAnalysis(captureOf(window(sim.flows, from, INT64_MAX), sim.topology));
            QCOMPARE(tail.report.jobs.size(), std::size_t(1));
            const auto& rest = tail.report.jobs[0].steps;
            QCOMPARE(rest.size(), truth.size() - 4);
            for (std::size_t k = 0; k < rest.size(); ++k)
                QVERIFY(std::llabs(rest[k].endNs - truth[k + 4].endNs) < 50'000);
            QVERIFY2(tail.report.jobs[0].findings.empty(), preset);
        }
    }

    void robustStatsAreMedianAndScaledMad() {
        RobustStats s = robustStats({1, 2, 3, 4, 100});
        QCOMPARE(s.median, 3.0);
        QVERIFY(std::fabs(s.sigma - 1.4826) < 1e-12);
        QCOMPARE(s.n, std::size_t(5));
        QCOMPARE(medianOf({4, 1, 3, 2}), 2.5);
        QCOMPARE(robustStats({}).n, std::size_t(0));
    }

    // Medians of many values are selected by radix on their bits: the same values, to the bit, as the middle of
    // the sorted values, on sizes about the threshold and values of every kind (few distinct, negatives, a wide
    // range of magnitudes, all equal, ties at the middle), and through robustStats' deviations.
    void largeMediansAreTheSortedMiddleToTheBit() {
        std::uint64_t x = 7;
        auto next = [&] {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            return x >> 11;
        };
        auto sortedMedian = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            const std::size_t h = v.size() / 2;
            return v.size() % 2 ? v[h] : (v[h] + v[h - 1]) / 2;
        };
        auto same = [](double a, double b) {
            return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
        };
        for (std::size_t n : {1023u, 1024u, 1025u, 2048u, 4097u, 25000u, 25001u}) {
            for (int kind = 0; kind < 6; ++kind) {
                std::vector<double> v(n);
                for (std::size_t i = 0; i < n; ++i) {
                    const double u = double(next() % 1000003) / 1000003.0;
                    switch (kind) {
                    case 0: v[i] = float(u * 40.0); break;                              // rates, as floats
                    case 1: v[i] = double(next() % 7); break;                           // few distinct
                    case 2: v[i] = (u - 0.5) * 1e6; break;                              // negatives too
                    case 3: v[i] = std::ldexp(u + 0.5, int(next() % 200) - 100); break; // magnitudes 1e-30..1e30
                    case 4: v[i] = 3.25; break;                                         // all equal
                    default: v[i] = i < n / 2 ? 1.0 : 2.0; break;                       // the middle a tie apart
                    }
                }
                const double m = sortedMedian(v);
                QVERIFY2(same(medianOf(v), m), qPrintable(QString("n %1 kind %2").arg(n).arg(kind)));
                std::vector<double> dev(v);
                for (double& d : dev) d = std::fabs(d - m);
                const RobustStats r = robustStats(v);
                QVERIFY(same(r.median, m));
                QVERIFY2(same(r.sigma, 1.4826 * sortedMedian(dev)),
                         qPrintable(QString("n %1 kind %2").arg(n).arg(kind)));
            }
        }
        // NaN or -0 among them: as before (nth_element), no crash.
        std::vector<double> signedZeros(3000, 0.0);
        for (std::size_t i = 0; i < signedZeros.size(); i += 2) signedZeros[i] = -0.0;
        QCOMPARE(medianOf(signedZeros), 0.0);
    }

    // sortNearlySorted is std::stable_sort: on lists in order, stirred a little (by insertion), stirred far (the
    // merge sort takes over midway) and reversed, with many equal keys whose order must stay.
    void sortNearlySortedIsTheStableSort() {
        std::uint64_t x = 11;
        auto next = [&](std::uint64_t n) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            return (x >> 33) % n;
        };
        using Item = std::pair<int, int>; // (key, place)
        auto less = [](const Item& a, const Item& b) { return a.first < b.first; };
        for (int round = 0; round < 400; ++round) {
            const std::size_t n = 1 + next(300);
            const int stir = int(next(5)) == 0 ? 1000 : int(next(30)); // far now and then
            std::vector<Item> v;
            for (std::size_t i = 0; i < n; ++i) v.push_back({int(i / 3) + int(next(std::uint64_t(stir) + 1)), int(i)});
            if (round % 50 == 0) std::reverse(v.begin(), v.end());
            std::vector<Item> want = v;
            std::stable_sort(want.begin(), want.end(), less);
            sortNearlySorted(v, less, 1 + next(20));
            QVERIFY2(v == want, qPrintable(QString("round %1").arg(round)));
        }
    }

    // unitePiece against the union taken by sorting: intervals on a small grid (so that many touch, nest and
    // coincide), in order, a little out of order (a start stirred by up to `spread`, as clock offsets stir
    // records), and shuffled; and joinUnions of two parts' unions against it.
    void unitePieceIsTheUnionInAnyOrder() {
        using P = std::pair<std::int64_t, std::int64_t>;
        std::uint64_t x = 99;
        auto next = [&](std::uint64_t n) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            return std::int64_t((x >> 33) % n);
        };
        for (int round = 0; round < 300; ++round) {
            const int count = 1 + int(next(60));
            const std::int64_t spread = next(4) * 5;
            std::vector<P> in;
            std::int64_t t = 0;
            for (int i = 0; i < count; ++i) {
                t += next(6);
                const std::int64_t s = t - next(std::uint64_t(spread) + 1);
                in.push_back({s, s + next(12)});
            }
            std::vector<P> sorted = in;
            std::sort(sorted.begin(), sorted.end());
            std::vector<P> want;
            for (const P& p : sorted) {
                if (want.empty() || p.first > want.back().second) want.push_back(p);
                else want.back().second = std::max(want.back().second, p.second);
            }
            if (round % 3 == 2)
                for (std::size_t i = in.size() - 1; i > 0; --i) std::swap(in[i], in[std::size_t(next(i + 1))]);
            std::vector<P> got;
            for (const P& p : in) unitePiece(got, p);
            QCOMPARE(got, want);
            // United in two parts cut anywhere, then joined (as step division unites a long job's halves).
            const std::size_t cut = std::size_t(next(in.size() + 1));
            std::vector<P> first, second;
            for (std::size_t i = 0; i < in.size(); ++i) unitePiece(i < cut ? first : second, in[i]);
            QCOMPARE(joinUnions(first, second), want);
            QCOMPARE(joinUnions(second, first), want);
        }
    }

    // Step division takes a job's records in any order: the same steps, sync times, clock offsets and notes
    // from the records by start (a sorted table: the DP series collected group by group, the job's activity
    // united as it comes, aligned records a little out of order) and from the same records shuffled (every
    // group's series sorted, the activity sorted before it is united, the records by start in two halves side by
    // side). Presets with clock skew, pipelines
    // (several groups cut apart), one phase (pure DP), and DP traffic all through the step (ZeRO-3).
    void theOrderOfAJobsRecordsDoesNotChangeItsSteps_data() {
        QTest::addColumn<QString>("preset");
        // Every way a series is taken: one DP series read as the records come (pure-dp, zero1, fsdp), a series
        // per DP group (the pipelines), groups judged for expert exchanges first (moe, moe-ep-lt-dp), the PP
        // rhythm without DP (pure-pp, interleaved-nodp).
        for (const char* p : {"pure-dp", "anomalies", "deep-pipeline", "zero1", "fsdp", "interleaved", "checkpoints",
                              "moe", "moe-ep-lt-dp", "pure-pp", "interleaved-nodp"})
            QTest::newRow(p) << QString(p);
    }
    // The passes over a job's records go in parts side by side and its DP groups' series are cut side by side:
    // on any number of threads the division is the one a single thread makes.
    void theStepsAreTheSameOnAnyNumberOfThreads_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("anomaly"); // on steps 5-9 of the job's second host's first GPU, or none
        QTest::addColumn<double>("factor");
        for (const char* p : {"moe", "moe-ep-lt-dp", "interleaved", "zero1", "fsdp", "megatron-8", "deep-pipeline",
                              "grad-accum", "anomalies", "pp-anomalies", "checkpoints"})
            QTest::newRow(p) << QString(p) << QString() << 1.0;
        // Groups whose bursts differ in number (a slow link cuts its ring's sync apart, a slow GPU's stage syncs
        // late): a burst each group's own.
        QTest::newRow("megatron-8 slow link") << "megatron-8"
                                              << "slow_link" << 8.0;
        QTest::newRow("deep-pipeline slow link") << "deep-pipeline"
                                                 << "slow_link" << 8.0;
        QTest::newRow("interleaved slow rank") << "interleaved"
                                               << "slow_rank" << 3.0;
    }
    void theStepsAreTheSameOnAnyNumberOfThreads() {
        QFETCH(QString, preset);
        QFETCH(QString, anomaly);
        QFETCH(double, factor);
        sim::SimConfig config = presetConfig(qPrintable(preset), 1);
        if (!anomaly.isEmpty()) {
            sim::AnomalySpec x;
            x.kind = anomaly.toStdString();
            x.job = 0;
            x.host = config.jobs[0].hosts[1];
            x.gpu = config.jobs[0].firstGpu;
            x.firstStep = 5;
            x.lastStep = 9;
            x.factor = factor;
            config.anomalies = {x};
        }
        const Capture c = captureOf(sim::simulate(config));
        const Analysis a = runAnalysis(c);
        QVERIFY(!a.recognition.jobs.empty());
        const RecognizedJob& job = a.recognition.jobs[0];
        QVERIFY(job.records.size() >= 2 * 4096); // read in parts
        const std::int64_t first = c.flows.startNs.empty() ? 0 : c.flows.startNs.front();
        StepParams one;
        one.threads = 1;
        const StepDivision d = divideSteps(c.flows, c.topology, job, a.jobs[0].parallelism, one, first);
        QVERIFY(d.steps.size() >= 4);
        // The expert groups gathered on the way are those of a pass of their own over the records (diagnosis takes
        // them from the division).
        const std::vector<int> groups =
            expertGroups(c.flows, job, JobIndex(c.flows, c.topology, job, a.jobs[0].parallelism));
        QCOMPARE(d.expertGroups, groups);
        if (preset.startsWith("moe")) QVERIFY(std::any_of(groups.begin(), groups.end(), [](int g) { return g >= 0; }));
        for (unsigned threads : {2u, 3u, 7u}) {
            StepParams p;
            p.threads = threads;
            const StepDivision e = divideSteps(c.flows, c.topology, job, a.jobs[0].parallelism, p, first);
            sameDivision(e, d);
            if (QTest::currentTestFailed()) return;
            QCOMPARE(e.syncEndNs, d.syncEndNs);
            QCOMPARE(e.changeProbability, d.changeProbability);
            QCOMPARE(e.firstStepCut, d.firstStepCut);
            QCOMPARE(e.lastStepCut, d.lastStepCut);
            QCOMPARE(e.medianStepNs, d.medianStepNs);
            QCOMPARE(e.expertGroups, groups);
        }
    }

    // The check reads the records in parts side by side: a step back is seen wherever it is, at a part's first
    // record too.
    void recordsByStartSeesAStepBackAnywhere() {
        FlowTable t;
        const EndpointId a = t.endpoints.intern(*IpAddr::parse("10.0.0.1")),
                         b = t.endpoints.intern(*IpAddr::parse("10.0.0.2"));
        const std::size_t n = 300000;
        for (std::size_t i = 0; i < n; ++i)
            t.append(std::int64_t(1000 * i), std::int64_t(1000 * i + 10), a, b, 1, 4791, 17, 1, 1);
        RecognizedJob job;
        for (std::uint32_t i = 0; i < n; ++i) job.records.push_back(i);
        QVERIFY(recordsByStart(t, job));
        for (std::size_t at : {std::size_t(1), n / 4, n / 3, n / 2, 2 * n / 3, n - 1}) {
            RecognizedJob back = job;
            std::swap(back.records[at - 1], back.records[at]);
            QVERIFY2(!recordsByStart(t, back), qPrintable(QString::number(at)));
        }
    }

    void theOrderOfAJobsRecordsDoesNotChangeItsSteps() {
        QFETCH(QString, preset);
        sim::SimResult sim = sim::simulate(presetConfig(preset.toStdString().c_str(), 2));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        QVERIFY(!a.recognition.jobs.empty());
        const RecognizedJob& job = a.recognition.jobs[0];
        QVERIFY(recordsByStart(c.flows, job));
        RecognizedJob shuffled = job;
        std::uint64_t x = 12345;
        for (std::size_t i = shuffled.records.size() - 1; i > 0; --i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(shuffled.records[i], shuffled.records[(x >> 33) % (i + 1)]);
        }
        QVERIFY(!recordsByStart(c.flows, shuffled));
        const std::int64_t first = c.flows.startNs.empty() ? 0 : c.flows.startNs.front();
        StepParams halves; // the activity of the records by start united in two halves, however few they are
        halves.splitUnionRecords = 2;
        const StepDivision d = divideSteps(c.flows, c.topology, job, a.jobs[0].parallelism, halves, first);
        const StepDivision e = divideSteps(c.flows, c.topology, shuffled, a.jobs[0].parallelism, {}, first);
        QVERIFY(d.steps.size() >= 4);
        sameDivision(e, d);
        // And the division found is the truth's.
        QVERIFY2(stepScore(a.report, sim.truth).exact(), qPrintable(preset));
    }

    // Expert all-to-all between DP peers and no gradient sync beside it: every DP record is an exchange, the steps
    // follow the pipeline as they would without the DP records, and no exchange joins a PP burst. (`moe` with
    // its ring's records taken out: 16 DP groups, so the exchanges of every group are tried.)
    void expertExchangesWithoutARingLeaveThePipelineRhythm() {
        const sim::SimResult sim = sim::simulate(presetConfig("moe", 1));
        const Capture full = captureOf(sim);
        const Analysis a = runAnalysis(full);
        const StepDivision& d = *a.jobs[0].division;
        QVERIFY(!d.expertPairs.empty());
        const JobIndex ix(full.flows, full.topology, a.recognition.jobs[0], a.jobs[0].parallelism);
        auto ring = [&](std::size_t i) { // a DP record of the job that is no exchange
            const int x = ix.local(full.flows.src[i]), y = ix.local(full.flows.dst[i]);
            return x >= 0 && y >= 0 && ix.kind(x, y) == PairKind::DP && ix.dpGroup(x) >= 0 &&
                   ix.dpGroup(x) == ix.dpGroup(y) &&
                   !d.isExchange(full.flows.src[i], full.flows.dst[i],
                                 full.flows.startNs[i] - d.offsetOf(full.flows.src[i]));
        };
        FlowTable kept, noDp;
        kept.endpoints = noDp.endpoints = full.flows.endpoints;
        std::size_t rings = 0;
        for (std::size_t i = 0; i < full.flows.size(); ++i) {
            const FlowTable& f = full.flows;
            if (ring(i)) {
                ++rings;
                continue;
            }
            kept.append(f.startNs[i], f.end(i), f.src[i], f.dst[i], f.srcPort[i], f.dstPort[i], f.proto[i], f.bytes[i],
                        f.packets[i]);
        }
        QVERIFY(rings > 100);
        const Capture c = captureOf(kept, sim.topology);
        const Analysis b = runAnalysis(c);
        QCOMPARE(b.jobs.size(), std::size_t(1));
        const RecognizedJob& job = b.recognition.jobs[0];
        // Without the ring the peers form no DP groups of their own: the full capture's parallelism is given.
        const ParallelismResult& par = a.jobs[0].parallelism;
        QCOMPARE(par.dpGroups.size(), std::size_t(16));
        const std::int64_t first = c.flows.startNs.front();
        const StepDivision e = divideSteps(c.flows, c.topology, job, par, {}, first);
        QCOMPARE(e.source, StepSource::Pipeline);
        QVERIFY(!e.expertPairs.empty());
        // Every DP record of the job is an exchange.
        const JobIndex jx(c.flows, c.topology, job, par);
        RecognizedJob ppOnly = job;
        ppOnly.records.clear();
        std::size_t dpRecords = 0;
        for (std::uint32_t r : job.records) {
            const int x = jx.local(c.flows.src[r]), y = jx.local(c.flows.dst[r]);
            const bool dp = x >= 0 && y >= 0 && jx.kind(x, y) == PairKind::DP && jx.dpGroup(x) == jx.dpGroup(y);
            if (!dp) {
                ppOnly.records.push_back(r);
                continue;
            }
            ++dpRecords;
            QVERIFY(e.isExchange(c.flows.src[r], c.flows.dst[r], c.flows.startNs[r] - e.offsetOf(c.flows.src[r])));
        }
        QVERIFY(dpRecords > 100);
        // The steps are those of the PP records alone.
        const StepDivision p = divideSteps(c.flows, c.topology, ppOnly, par, {}, first);
        QCOMPARE(p.source, StepSource::Pipeline);
        QVERIFY(e.steps.size() >= 4);
        QCOMPARE(e.steps.size(), p.steps.size());
        for (std::size_t k = 0; k < e.steps.size(); ++k) { // (step 0 starts at the job's first record, of any kind)
            if (k) QCOMPARE(e.steps[k].startNs, p.steps[k].startNs);
            QCOMPARE(e.steps[k].endNs, p.steps[k].endNs);
        }
    }

    void aJobWithoutRecordsHasNoSteps() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 1));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        RecognizedJob empty = a.recognition.jobs[0];
        empty.records.clear();
        StepDivision d = divideSteps(c.flows, c.topology, empty, a.jobs[0].parallelism);
        QVERIFY(d.steps.empty());
        JobTimeline tl = buildTimeline(c.flows, c.topology, empty, a.jobs[0].parallelism, d);
        QCOMPARE(tl.segmentCount(), std::size_t(0));
        // One record: one step at most, never a crash.
        RecognizedJob one = a.recognition.jobs[0];
        one.records.resize(1);
        StepDivision d1 = divideSteps(c.flows, c.topology, one, a.jobs[0].parallelism);
        QVERIFY(d1.steps.size() <= 1);
    }
};

QTEST_APPLESS_MAIN(TestSteps)
#include "tst_steps.moc"
