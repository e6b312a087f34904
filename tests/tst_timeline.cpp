// Engine stage 4: the per-rank timeline (segments, micro-batches, per-rank step statistics, queries by time
// window) of simulated captures.
#include "test_util.h"
#include "analysis/pipeline.h"
#include "analysis/timeline.h"
#include "sim/simulator.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace prism;
using namespace prism::test;

namespace {

bool same(const Segment& a, const Segment& b) {
    return a.startNs == b.startNs && a.endNs == b.endNs && a.kind == b.kind && a.microBatch == b.microBatch &&
           a.peer == b.peer && a.bytes == b.bytes;
}

// The statistics of one rank in one step that diagnosis reads.
bool sameStepStats(const RankStepStats& x, const RankStepStats& y) {
    return x.ppSends == y.ppSends && x.ppRecvs == y.ppRecvs && x.dpStartNs == y.dpStartNs && x.dpEndNs == y.dpEndNs &&
           x.dpStartLagNs == y.dpStartLagNs && x.forwardComputeNs == y.forwardComputeNs &&
           x.backwardComputeNs == y.backwardComputeNs && x.forwardSamples == y.forwardSamples &&
           x.backwardSamples == y.backwardSamples;
}

// `large` (seed 1) cut to 3 steps, analysed: two jobs of 1,024 and 256 ranks. Simulated once per run.
struct LargeRun {
    Capture capture;
    Analysis analysis;
};
const LargeRun& largeInThreeSteps() {
    static const LargeRun run = [] {
        sim::SimConfig config = presetConfig("large", 1);
        for (auto& j : config.jobs) j.steps = 3;
        LargeRun r{captureOf(sim::simulate(config)), {}};
        r.analysis = runAnalysis(r.capture);
        return r;
    }();
    return run;
}

} // namespace

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
                const int st = tl.stepAt(s.startNs);
                if (st < 0) continue;
                seen[{r, std::uint32_t(st), int(s.kind), s.peer}].insert(s.microBatch);
            }
        QVERIFY(!seen.empty());
        std::size_t full = 0;
        for (const auto& [key, mbs] : seen) {
            QVERIFY(*mbs.rbegin() <= 3);
            full += mbs == std::set<int>{0, 1, 2, 3};
        }
        QVERIFY2(full * 10 >= seen.size() * 9, qPrintable(QString("%1 of %2").arg(full).arg(seen.size())));
    }

    // An exporter that cuts transfers into short records (0.1 ms, 3% of them lost) splits a transfer in two
    // where every channel of it lost its piece at once: every later transfer of the step took the next one's
    // micro-batch, up to m where m micro-batches run. The piece after the gap starts one timeout after its
    // channel's last whole piece ended, and continues the transfer: numbers stay below m, and most peers' sets
    // are whole.
    void aTransferThatLostAPieceStaysOne() {
        sim::SimConfig config = presetConfig("tiny", 2);
        config.activeTimeoutNs = 100'000;
        config.lossRate = 0.03;
        for (auto& j : config.jobs) {
            j.channels = 1;                                  // its lost piece leaves a gap in the transfer
            j.activationBytes = std::uint64_t(128) << 20; // some 7 pieces a transfer
        }
        const sim::SimResult sim = sim::simulate(config);
        const int m = config.jobs[0].microBatches;
        Analysis a = runAnalysis(captureOf(sim));
        const JobTimeline& tl = a.jobs[0].timeline;
        std::map<std::tuple<std::size_t, int, int, std::uint32_t>, std::set<int>> seen;
        for (std::size_t r = 0; r < tl.ranks.size(); ++r)
            for (const Segment& s : tl.ranks[r].segments) {
                const int st = tl.stepAt(s.startNs);
                if ((s.kind == SegmentKind::PpSend || s.kind == SegmentKind::PpRecv) && st > 0 &&
                    st + 1 < int(tl.steps.size()))
                    seen[{r, st, int(s.kind), s.peer}].insert(s.microBatch);
            }
        QVERIFY(seen.size() > 20);
        std::size_t beyond = 0, whole = 0;
        for (const auto& [key, mbs] : seen) {
            beyond += *mbs.rbegin() >= m;
            whole += int(mbs.size()) == m && *mbs.rbegin() == m - 1;
        }
        QVERIFY2(beyond * 50 <= seen.size(), qPrintable(QString("%1 of %2 beyond").arg(beyond).arg(seen.size())));
        QVERIFY2(whole * 10 >= seen.size() * 9, qPrintable(QString("%1 of %2 whole").arg(whole).arg(seen.size())));
    }

    // The statistics a report needs, built rank block by rank block (each pass finding its records from a byte
    // a record and end), are those of the timeline with segments (made in blocks of whole DP groups itself, tested
    // against one block below): `large`'s two jobs of 1,024 and 256 ranks (8 and 4 blocks), cut to 3 steps.
    // On any number of threads: each block's passes are looked up in a byte a record (up to 16 passes, 4 bits each),
    // two bytes (up to 254) or not at all.
    void statisticsByBlocksOfRanksAreTheWholeTimelines_data() {
        QTest::addColumn<unsigned>("threads");
        for (unsigned t : {0u, 1u, 3u, 8u, 40u}) QTest::newRow(qPrintable(QString("%1 threads").arg(t))) << t;
    }
    void statisticsByBlocksOfRanksAreTheWholeTimelines() {
        QFETCH(unsigned, threads);
        const Capture& c = largeInThreeSteps().capture;
        const Analysis& a = largeInThreeSteps().analysis;
        QCOMPARE(a.jobs.size(), std::size_t(2));
        for (std::size_t j = 0; j < a.jobs.size(); ++j) {
            const RecognizedJob& rj = a.recognition.jobs[j];
            const StepDivision& d = *a.jobs[j].division;
            const JobTimeline stats =
                buildTimelineStats(c.flows, c.topology, rj, a.jobs[j].parallelism, d, nullptr, threads);
            const JobTimeline& whole = a.jobs[j].timeline;
            QVERIFY(whole.ranks.size() > 128);
            QCOMPARE(stats.ranks.size(), whole.ranks.size());
            std::size_t sends = 0;
            for (std::size_t r = 0; r < whole.ranks.size(); ++r) {
                QCOMPARE(stats.ranks[r].nic, whole.ranks[r].nic);
                for (std::size_t k = 0; k < whole.steps.size(); ++k) {
                    QVERIFY2(sameStepStats(stats.ranks[r].stepStats[k], whole.ranks[r].stepStats[k]),
                             qPrintable(QString("job %1 rank %2 step %3").arg(j).arg(r).arg(k)));
                    sends += stats.ranks[r].stepStats[k].ppSends;
                }
            }
            QVERIFY(sends > 0);
        }
    }

    // A timeline with segments made in blocks of ranks (eighths of `large`'s job of 1,024 ranks, quarters of its
    // job of 256, and blocks of 64 and 300) is the one made in one block: every segment of every rank, and the
    // step statistics.
    void segmentsByBlocksOfRanksAreTheOneBlocksTimeline() {
        const Capture& c = largeInThreeSteps().capture;
        const Analysis& a = largeInThreeSteps().analysis;
        QCOMPARE(a.jobs.size(), std::size_t(2));
        for (std::size_t j = 0; j < a.jobs.size(); ++j) {
            const RecognizedJob& rj = a.recognition.jobs[j];
            const StepDivision& d = *a.jobs[j].division;
            const std::size_t R = a.jobs[j].timeline.ranks.size();
            const JobTimeline one = buildTimeline(c.flows, c.topology, rj, a.jobs[j].parallelism, d, nullptr, false, R);
            for (std::size_t blockRanks : {std::size_t(0), std::size_t(64), std::size_t(300)}) {
                const JobTimeline cut =
                    buildTimeline(c.flows, c.topology, rj, a.jobs[j].parallelism, d, nullptr, false, blockRanks);
                QCOMPARE(cut.ranks.size(), one.ranks.size());
                std::size_t segments = 0;
                for (std::size_t r = 0; r < R; ++r) {
                    const RankTimeline &x = cut.ranks[r], &y = one.ranks[r];
                    const QString where = QString("job %1 rank %2 (blocks of %3)").arg(j).arg(r).arg(blockRanks);
                    QCOMPARE(x.segmentCount(), y.segmentCount());
                    for (std::size_t i = 0; i < x.segmentCount(); ++i)
                        QVERIFY2(same(x.segment(i), y.segment(i)), qPrintable(where + QString(" segment %1").arg(i)));
                    segments += x.segmentCount();
                    for (std::size_t k = 0; k < one.steps.size(); ++k)
                        QVERIFY2(sameStepStats(x.stepStats[k], y.stepStats[k]),
                                 qPrintable(where + QString(" step %1").arg(k)));
                }
                QVERIFY(segments > R);
            }
        }
    }

    // A timeline with segments is made in blocks that end between DP groups only (the compute before a sync is
    // the whole group's): with groups of 6 ranks a block of 64 would split one. Its per-rank lag behind the group's
    // first sync start is the one the statistics, made over all ranks at once, find.
    void segmentBlocksKeepDpGroupsWhole() {
        sim::SimConfig config = presetConfig("large", 2);
        config.jobs.resize(1);
        sim::JobSpec& job = config.jobs[0];
        job.tp = 8;
        job.pp = 2;
        job.dp = 6;
        job.hosts.resize(12);
        job.steps = 3;
        const Capture c = captureOf(sim::simulate(config));
        const Analysis a = runAnalysis(c);
        QCOMPARE(a.jobs.size(), std::size_t(1));
        const JobTimeline& whole = a.jobs[0].timeline;
        QCOMPARE(whole.ranks.size(), std::size_t(96));
        const JobTimeline stats =
            buildTimelineStats(c.flows, c.topology, a.recognition.jobs[0], a.jobs[0].parallelism, *a.jobs[0].division);
        std::size_t lagging = 0;
        for (std::size_t r = 0; r < whole.ranks.size(); ++r)
            for (std::size_t k = 0; k < whole.steps.size(); ++k) {
                QCOMPARE(whole.ranks[r].stepStats[k].dpStartLagNs, stats.ranks[r].stepStats[k].dpStartLagNs);
                lagging += stats.ranks[r].stepStats[k].dpStartLagNs > 0;
            }
        QVERIFY(lagging > 0);
    }

    // Tied embeddings close a pipeline with one all-reduce a step between the first and last stage. Where records
    // are 1 ms pieces and 1.3% of them lost (random draw 100186: TP 4 x PP 7 x DP 5), pieces of it escaped the
    // both-ways rule and made stage 0 a ring end (an interleaved stage 0, sampled on its warm-up alone: 5 of 40
    // forwards). A stage 0 that trades with the last stage under a quarter as often as with stage 1 is no ring
    // end: its forwards after the warm-up are sampled.
    void tiedEmbeddingPiecesMakeNoRing() {
        const sim::SimConfig config = sim::randomConfig(100186);
        QVERIFY(config.jobs[0].tiedEmbedding && config.jobs[0].virtualStages == 1);
        const Analysis a = runAnalysis(captureOf(sim::simulate(config)));
        QCOMPARE(a.jobs.size(), std::size_t(1));
        const JobTimeline& tl = a.jobs[0].timeline;
        std::size_t stage0 = 0;
        for (const RankTimeline& r : tl.ranks) {
            if (r.stage != 0) continue;
            ++stage0;
            for (std::size_t k = 1; k + 1 < tl.steps.size(); ++k) {
                const RankStepStats& s = r.stepStats[k];
                QVERIFY2(s.forwardSamples + s.warmupSamples >= 30,
                         qPrintable(QString("%1 + %2 samples").arg(s.forwardSamples).arg(s.warmupSamples)));
            }
        }
        QCOMPARE(stage0, std::size_t(10));
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

    // A job-wide stall before a step (a checkpoint) is waiting in a job without PP traffic too, where a
    // rank's first op is the compute before its DP sync (a 70 s checkpoint read as 116 s of compute); and a
    // MoE rank computes between its expert exchanges (its steps read as 80% waiting before). Both measured
    // against the simulator: the checkpoint's pause, and a clean step's compute.
    void stallsAreWaitingAndExpertRanksCompute() {
        sim::SimConfig config = presetConfig("checkpoints", 3);
        sim::SimResult sim = sim::simulate(config);
        Analysis a = runAnalysis(captureOf(sim));
        const JobTimeline& tl = a.jobs[0].timeline;
        const auto& truth = sim.truth.jobs[0];
        int checked = 0;
        for (const auto& an : truth.anomalies) {
            if (an.kind != "periodic_stall") continue;
            for (int k : an.occurrences) {
                // The stall step's extra time over its neighbour is the pause: waiting, on every rank.
                const std::int64_t pause = truth.steps[std::size_t(k)].endNs - truth.steps[std::size_t(k)].startNs -
                                           (truth.steps[std::size_t(k) + 1].endNs - truth.steps[std::size_t(k) + 1].startNs);
                for (std::size_t r = 0; r < tl.ranks.size(); ++r) {
                    const RankStepStats* s = tl.stats(r, std::size_t(k));
                    QVERIFY(s);
                    QVERIFY2(s->waitNs >= pause * 9 / 10, qPrintable(QString("step %1 rank %2: wait %3 ms, pause %4 ms")
                                                                        .arg(k).arg(r).arg(s->waitNs / 1e6).arg(pause / 1e6)));
                    QVERIFY(s->computeNs < tl.stats(r, std::size_t(k) + 1)->computeNs * 3 / 2);
                }
                ++checked;
            }
        }
        QVERIFY(checked >= 2);
        // A MoE rank computes its micro-batches' forwards and backwards (the simulator's compute per step):
        // the timeline's compute per rank and step is that, within 10%.
        for (const char* preset : {"moe", "moe-ep-lt-dp"}) {
            const sim::SimConfig moe = presetConfig(preset, 3);
            const sim::JobSpec& j = moe.jobs[0];
            const double expected = double(j.microBatches) * double(j.forwardNs) * (1.0 + j.backwardRatio);
            Analysis m = runAnalysis(captureOf(sim::simulate(moe)));
            const JobTimeline& t = m.jobs[0].timeline;
            double compute = 0, n = 0;
            for (std::size_t r = 0; r < t.ranks.size(); ++r)
                for (std::size_t k = 1; k + 1 < t.steps.size(); ++k, ++n) compute += double(t.stats(r, k)->computeNs);
            const double measured = compute / n;
            QVERIFY2(std::fabs(measured / expected - 1.0) < 0.10,
                     qPrintable(QString("%1: compute %2 ms per rank and step, simulated %3 ms")
                                    .arg(preset).arg(measured / 1e6).arg(expected / 1e6)));
        }
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

    // The GUI's timelines hold their segments packed: every segment, the random access to one, and the visible
    // range of any window come back as the unpacked timeline has them, and the statistics are the same.
    void packedSegmentsAreTheSegments_data() {
        QTest::addColumn<QString>("preset");
        for (const char* p : {"two-jobs", "anomalies", "interleaved", "moe"}) QTest::newRow(p) << QString(p);
    }
    void packedSegmentsAreTheSegments() {
        QFETCH(QString, preset);
        const Capture c = captureOf(sim::simulate(presetConfig(qPrintable(preset), 2)));
        AnalysisOptions packedOptions;
        packedOptions.packSegments = true;
        const Analysis plain = runAnalysis(c), packed = runAnalysis(c, packedOptions);
        QCOMPARE(packed.report.jobs.size(), plain.report.jobs.size());
        QVERIFY(!plain.jobs.empty());
        std::size_t checked = 0, bytes = 0;
        std::vector<Segment> scratch, all;
        for (std::size_t j = 0; j < plain.jobs.size(); ++j) {
            const JobTimeline &a = plain.jobs[j].timeline, &b = packed.jobs[j].timeline;
            QCOMPARE(b.ranks.size(), a.ranks.size());
            QCOMPARE(b.segmentCount(), a.segmentCount());
            const std::int64_t span = a.endNs - a.startNs;
            for (std::size_t r = 0; r < a.ranks.size(); ++r) {
                const RankTimeline &x = a.ranks[r], &y = b.ranks[r];
                QVERIFY(x.packed.empty());
                QVERIFY(y.segments.empty());
                QCOMPARE(y.packed.size(), x.segments.size());
                QCOMPARE(y.maxSegmentNs, x.maxSegmentNs);
                for (std::size_t k = 0; k < x.stepStats.size(); ++k) {
                    QCOMPARE(y.stepStats[k].computeNs, x.stepStats[k].computeNs);
                    QCOMPARE(y.stepStats[k].waitNs, x.stepStats[k].waitNs);
                    QCOMPARE(y.stepStats[k].dpSyncNs, x.stepStats[k].dpSyncNs);
                }
                y.packed.unpack(all);
                const auto& every = all;
                QCOMPARE(every.size(), x.segments.size());
                for (std::size_t i = 0; i < x.segments.size(); ++i) {
                    QVERIFY(same(every[i], x.segments[i]));
                    if (i % 7 == 0) QVERIFY(same(y.segment(i), x.segments[i]));
                }
                std::size_t k = 0;
                bool inOrder = true;
                y.forEachSegment([&](const Segment& seg) {
                    inOrder = inOrder && k < x.segments.size() && same(seg, x.segments[k]);
                    ++k;
                });
                QVERIFY(inOrder);
                QCOMPARE(k, x.segments.size());
                bytes += y.packed.memoryBytes();
                // Windows across the job, some empty, some before and after it.
                for (int w = -1; w <= 40; ++w) {
                    const std::int64_t t0 = a.startNs + span * w / 40 - 7'919, t1 = t0 + span / (w % 3 ? 53 : 9);
                    const auto [first, last] = a.visible(r, t0, t1);
                    std::size_t at = 12345;
                    const auto seen = y.visibleSegments(t0, t1, scratch, &at);
                    QCOMPARE(seen.size(), last - first);
                    if (last > first) QCOMPARE(at, first);
                    for (std::size_t i = 0; i < seen.size(); ++i) QVERIFY(same(seen[i], x.segments[first + i]));
                    std::size_t at2 = 0;
                    const auto direct = x.visibleSegments(t0, t1, scratch, &at2);
                    QCOMPARE(direct.size(), last - first);
                    if (last > first) QCOMPARE(at2, first);
                    ++checked;
                }
            }
            // Packed, a segment takes well under half of its 32 bytes.
            QVERIFY2(bytes * 2 < a.segmentCount() * sizeof(Segment),
                     qPrintable(QString("%1 bytes for %2 segments").arg(bytes).arg(a.segmentCount())));
            bytes = 0;
        }
        QVERIFY(checked > 100);
    }

    // Any segment packs and unpacks as it was: extremes of every field, out of order and overlapping ones, kinds
    // no build makes, and block boundaries.
    void anySegmentPacksAsItWas() {
        std::vector<Segment> segs;
        const std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
        segs.push_back({lo, hi, SegmentKind::Wait, 0, 0, 0});
        segs.push_back({hi, lo, SegmentKind(6), kNoMicroBatch - 1, kNoIndex - 1, ~std::uint64_t(0)});
        segs.push_back({0, 0, SegmentKind(255), kNoMicroBatch, kNoIndex, 1});
        segs.push_back({-5, -1, SegmentKind::PpSend, 3, 7, 1u << 31});
        segs.push_back({-10, 1'000'000'000'000, SegmentKind::DpSync, kNoMicroBatch, 2, 0}); // before the previous
        std::uint64_t x = 0x9E3779B97F4A7C15ull;
        auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
        std::int64_t t = 1'700'000'000'000'000'000;
        for (int i = 0; i < 1000; ++i) {
            Segment s;
            s.startNs = next() % 5 ? t : t + std::int64_t(next() % 100'000);
            s.endNs = s.startNs + std::int64_t(next() % (i % 97 ? 10'000 : 100'000'000'000));
            s.kind = SegmentKind(next() % 6);
            s.microBatch = next() % 2 ? std::uint16_t(next()) : kNoMicroBatch;
            s.peer = next() % 2 ? std::uint32_t(next()) : kNoIndex;
            s.bytes = next() % 2 ? next() >> (next() % 64) : 0;
            segs.push_back(s);
            t = s.endNs;
        }
        for (std::size_t n :
             {std::size_t(0), std::size_t(1), PackedSegments::kBlock, PackedSegments::kBlock + 1, segs.size()}) {
            const std::vector<Segment> part(segs.begin(), segs.begin() + std::ptrdiff_t(n));
            const PackedSegments p(part);
            QCOMPARE(p.size(), n);
            std::vector<Segment> back{Segment{}};
            p.unpack(back);
            QCOMPARE(back.size(), n);
            for (std::size_t i = 0; i < n; ++i) {
                QVERIFY2(same(back[i], part[i]), qPrintable(QString("segment %1 of %2").arg(i).arg(n)));
                QVERIFY(same(p.at(i), part[i]));
            }
        }
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
