// Engine stage 4: the per-rank timeline (segments, micro-batches, per-rank step statistics, queries by time
// window) of simulated captures.
#include "test_util.h"
#include "analysis/pipeline.h"
#include "analysis/timeline.h"
#include "sim/simulator.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

using namespace prism;
using namespace prism::test;

class TestTimeline : public QObject {
    Q_OBJECT

private slots:
    void timelineSegmentsAreSortedDisjointAndEachInOneStep() {
        sim::SimResult sim = sim::simulate(presetConfig("anomalies", 2));
        Analysis a = runAnalysis(captureOf(sim));
        for (const JobAnalysis& job : a.jobs) {
            const JobTimeline& tl = job.timeline;
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
        const JobTimeline& tl = a.jobs[0].timeline;
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
        const JobTimeline& tl = a.jobs[0].timeline;
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
        const JobTimeline& tl = a.jobs[0].timeline;
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
        const JobTimeline& tl = a.jobs[0].timeline;
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
        JobTimeline raw = buildTimeline(c.flows, c.topology, a.recognition.jobs[0], a.jobs[0].parallelism,
                                        a.report.jobs[0].steps);
        QCOMPARE(raw.ranks.size(), a.jobs[0].timeline.ranks.size());
        QVERIFY(raw.segmentCount() > 0);
        QCOMPARE(QString(segmentKindName(SegmentKind::Wait)), QString("waiting"));
    }
};

QTEST_APPLESS_MAIN(TestTimeline)
#include "tst_timeline.moc"
