// Engine stages 3-4: step division (DP sync bursts, PP rhythm, clock alignment, BOCD) and the per-rank
// timeline, measured against the simulator's ground truth.
#include "test_util.h"
#include "analysis/evaluate.h"
#include "analysis/pipeline.h"
#include "analysis/steps.h"
#include "analysis/timeline.h"
#include "sim/simulator.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
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
            out.append(in.startNs[i], in.endNs[i], in.src[i], in.dst[i], in.srcPort[i], in.dstPort[i], in.proto[i],
                       in.bytes[i], in.packets[i]);
    return out;
}

// Step scores of one analysis against its truth.
StepScore stepScore(const Report& report, const Report& truth) { return evaluate(report, truth).totals.steps; }

} // namespace

class TestSteps : public QObject {
    Q_OBJECT

private slots:
    void everyPresetsStepsMatchTheTruth_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("seed");
        for (const char* p : {"tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies",
                              "reuse"})
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

    void stepsAreContiguousAndStepZeroStartsAtTheJobsFirstRecord() {
        sim::SimResult sim = sim::simulate(presetConfig("two-jobs", 4));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        QCOMPARE(a.steps.size(), a.report.jobs.size());
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
            QCOMPARE(a.steps[j].source, StepSource::DataParallel);
            QCOMPARE(a.steps[j].firstActivityNs.size(), steps.size());
        }
    }

    void aJobWithoutDpTrafficIsDividedByItsPipelineRhythm() {
        sim::SimResult sim = sim::simulate(presetConfig("pure-pp", 2));
        Analysis a = runAnalysis(captureOf(sim));
        QCOMPARE(a.steps.size(), std::size_t(1));
        QCOMPARE(a.steps[0].source, StepSource::Pipeline);
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
                QCOMPARE(a.steps[0].clockOffsetNs.empty(), !align);
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
        for (std::int64_t off : a.steps[0].clockOffsetNs) QVERIFY(std::llabs(off) <= 2'000);
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
        QVERIFY(a.steps[0].lastStepCut);
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
        QVERIFY(a.steps[0].firstStepCut);
        QVERIFY(steps[0].durationNs() < truth[4].durationNs());
        for (std::size_t k = 1; k < steps.size(); ++k) {
            const double err = std::fabs(double(steps[k].durationNs() - truth[k + 4].durationNs())) /
                               double(truth[k + 4].durationNs());
            QVERIFY(err < 0.001);
        }
        // Partial step 0 is left out of the slow-step statistics: no finding on a clean job.
        QVERIFY(a.report.jobs[0].findings.empty());
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
        const auto& cps = a.steps[0].changePoints;
        QVERIFY(std::any_of(cps.begin(), cps.end(), [](std::size_t c) { return c >= 11 && c <= 13; }));
        QCOMPARE(a.steps[0].changeProbability.size(), a.report.jobs[0].steps.size());
        QVERIFY(a.steps[0].changeProbability[12] > 0.95);

        Analysis clean = runAnalysis(captureOf(sim::simulate(presetConfig("tiny", 1))));
        QVERIFY(clean.steps[0].changePoints.empty());
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

    void robustStatsAreMedianAndScaledMad() {
        RobustStats s = robustStats({1, 2, 3, 4, 100});
        QCOMPARE(s.median, 3.0);
        QVERIFY(std::fabs(s.sigma - 1.4826) < 1e-12);
        QCOMPARE(s.n, std::size_t(5));
        QCOMPARE(medianOf({4, 1, 3, 2}), 2.5);
        QCOMPARE(robustStats({}).n, std::size_t(0));
    }

    void aJobWithoutRecordsHasNoSteps() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 1));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        RecognizedJob empty = a.recognition.jobs[0];
        empty.records.clear();
        StepDivision d = divideSteps(c.flows, c.topology, empty, a.parallelism[0]);
        QVERIFY(d.steps.empty());
        JobTimeline tl = buildTimeline(c.flows, c.topology, empty, a.parallelism[0], d);
        QCOMPARE(tl.segmentCount(), std::size_t(0));
        // One record: one step at most, never a crash.
        RecognizedJob one = a.recognition.jobs[0];
        one.records.resize(1);
        StepDivision d1 = divideSteps(c.flows, c.topology, one, a.parallelism[0]);
        QVERIFY(d1.steps.size() <= 1);
    }

    // ---- timeline ----

    void timelineSegmentsAreSortedDisjointAndEachInOneStep() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 2));
        Analysis a = runAnalysis(captureOf(sim));
        for (const JobTimeline& tl : a.timelines) {
            QVERIFY(tl.segmentCount() > 0);
            std::set<int> kinds;
            for (const RankTimeline& r : tl.ranks) {
                QCOMPARE(r.stepStats.size(), tl.steps.size());
                for (std::size_t i = 0; i < r.segments.size(); ++i) {
                    const Segment& s = r.segments[i];
                    QVERIFY(s.endNs > s.startNs);
                    QVERIFY(s.endNs - s.startNs <= r.maxSegmentNs);
                    if (i) QVERIFY(s.startNs >= r.segments[i - 1].endNs);
                    kinds.insert(int(s.kind));
                    if (s.kind == SegmentKind::Compute || s.kind == SegmentKind::Wait) {
                        // Gaps never straddle a step boundary.
                        const int st = tl.stepAt(s.startNs);
                        if (st >= 0) QVERIFY(s.endNs <= tl.steps[std::size_t(st)].endNs);
                    }
                    if (s.peer != kNoIndex) QVERIFY(s.peer < tl.ranks.size());
                    if (s.step != kNoIndex) QCOMPARE(int(s.step), tl.stepAt(s.startNs));
                }
            }
            QVERIFY(kinds.count(int(SegmentKind::Compute)));
            QVERIFY(kinds.count(int(SegmentKind::Wait)));
            QVERIFY(kinds.count(int(SegmentKind::DpSync)));
        }
    }

    // tiny: 4 micro-batches; every PP transfer of a step carries its micro-batch, 0..3 per peer and direction.
    void ppTransfersAreNumberedByMicroBatch() {
        sim::SimConfig config = presetConfig("tiny", 2);
        config.lossRate = 0; // a lost transfer would renumber the ones after it
        Analysis a = runAnalysis(captureOf(sim::simulate(config)));
        const JobTimeline& tl = a.timelines[0];
        std::map<std::tuple<std::size_t, std::uint32_t, int, std::uint32_t>, std::set<int>> seen;
        for (std::size_t r = 0; r < tl.ranks.size(); ++r)
            for (const Segment& s : tl.ranks[r].segments) {
                if (s.kind != SegmentKind::PpSend && s.kind != SegmentKind::PpRecv) {
                    QCOMPARE(s.microBatch, kNoMicroBatch);
                    continue;
                }
                if (s.step == kNoIndex) continue;
                seen[{r, s.step, int(s.kind), s.peer}].insert(s.microBatch);
            }
        QVERIFY(!seen.empty());
        std::size_t full = 0;
        for (const auto& [key, mbs] : seen) {
            QVERIFY(*mbs.rbegin() <= 3);
            full += mbs == std::set<int>{0, 1, 2, 3};
        }
        QVERIFY2(full * 10 >= seen.size() * 9, qPrintable(QString("%1 of %2").arg(full).arg(seen.size())));
    }

    void perRankStepStatsAddUpToTheStep() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 4));
        Analysis a = runAnalysis(captureOf(sim));
        const JobTimeline& tl = a.timelines[0];
        for (std::size_t r = 0; r < tl.ranks.size(); ++r)
            for (std::size_t k = 1; k + 1 < tl.steps.size(); ++k) {
                const RankStepStats* s = tl.stats(r, k);
                QVERIFY(s);
                const std::int64_t sum =
                    s->computeNs + s->waitNs + s->ppSendNs + s->ppRecvNs + s->dpSyncNs + s->otherNs;
                // Segments are counted in the step they start in: a transfer may spill over the end.
                QVERIFY(std::llabs(sum - tl.steps[k].durationNs()) <= tl.steps[k].durationNs() / 50);
                QVERIFY(s->dpStartNs != RankStepStats::kNoTime);
                QVERIFY(s->dpStartLagNs >= 0);
                QVERIFY(s->ppSends + s->ppRecvs > 0);
                QVERIFY(s->computeNs > 0);
                QVERIFY(s->forwardComputeNs + s->backwardComputeNs > 0);
            }
        QVERIFY(tl.stats(tl.ranks.size(), 0) == nullptr);
        QVERIFY(tl.stats(0, tl.steps.size()) == nullptr);
    }

    void visibleReturnsExactlyTheSegmentsInTheWindow() {
        sim::SimResult sim = sim::simulate(presetConfig("two-jobs", 2));
        Analysis a = runAnalysis(captureOf(sim));
        const JobTimeline& tl = a.timelines[0];
        const std::int64_t span = tl.endNs - tl.startNs;
        for (std::size_t r = 0; r < tl.ranks.size(); r += 5)
            for (int w = 0; w < 20; ++w) {
                const std::int64_t t0 = tl.startNs + span * w / 20 - 1'000'000, t1 = t0 + span / 37;
                auto [first, last] = tl.visible(r, t0, t1);
                const auto& s = tl.ranks[r].segments;
                std::size_t expectFirst = s.size(), expectLast = 0;
                for (std::size_t i = 0; i < s.size(); ++i)
                    if (s[i].endNs > t0 && s[i].startNs < t1) {
                        expectFirst = std::min(expectFirst, i);
                        expectLast = i + 1;
                    }
                if (expectLast == 0) QCOMPARE(first, last);
                else {
                    QCOMPARE(first, expectFirst);
                    QCOMPARE(last, expectLast);
                }
            }
        QCOMPARE(tl.visible(tl.ranks.size(), 0, 1), std::make_pair(std::size_t(0), std::size_t(0)));
        QCOMPARE(tl.rankOf(tl.ranks[3].ip), 3);
        QCOMPARE(tl.rankOf("192.0.2.1"), -1);
    }

    // A slow stage makes the rest of its pipeline wait: their waiting grows while their compute does not.
    void aSlowStageShowsAsWaitingInItsPeers() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 1));
        Analysis a = runAnalysis(captureOf(sim));
        const Finding& truth = sim.truth.jobs[0].anomalies[0];
        QCOMPARE(truth.kind, std::string("slow_rank"));
        const JobTimeline& tl = a.timelines[0];
        const std::set<std::string> slow(truth.group.begin(), truth.group.end());
        double slowWait = 0, slowCompute = 0, normalWait = 0, normalCompute = 0;
        int n = 0;
        auto compute = [](const RankStepStats& s) { return double(s.forwardComputeNs + s.backwardComputeNs); };
        for (const RankTimeline& r : tl.ranks) {
            if (slow.count(r.ip)) continue;
            for (int k = truth.firstStep; k <= truth.lastStep; ++k) {
                const RankStepStats &during = r.stepStats[std::size_t(k)], &before = r.stepStats[std::size_t(k - 5)];
                slowWait += double(during.waitNs);
                slowCompute += compute(during);
                normalWait += double(before.waitNs);
                normalCompute += compute(before);
                ++n;
            }
        }
        QVERIFY(n > 0);
        QVERIFY(slowWait > normalWait * 1.5);
        QVERIFY(std::fabs(slowCompute - normalCompute) < 0.03 * normalCompute);
    }

    void theRecordedTimeApiStillBuildsATimeline() {
        sim::SimResult sim = sim::simulate(presetConfig("tiny", 1));
        Capture c = captureOf(sim);
        Analysis a = runAnalysis(c);
        JobTimeline raw = buildTimeline(c.flows, c.topology, a.recognition.jobs[0], a.parallelism[0],
                                        a.report.jobs[0].steps);
        QCOMPARE(raw.ranks.size(), a.timelines[0].ranks.size());
        QVERIFY(raw.segmentCount() > 0);
        QCOMPARE(QString(segmentKindName(SegmentKind::Wait)), QString("waiting"));
    }
};

QTEST_APPLESS_MAIN(TestSteps)
#include "tst_steps.moc"
