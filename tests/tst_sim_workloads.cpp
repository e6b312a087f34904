// The simulator's presets run the workloads they are named for, each checked against its truth: job shapes and
// placement (shared hosts, two jobs, reuse, shared NICs, large), checkpoints, restarts and a day-long run, and
// the training schedules (distributed optimizer, FSDP, expert parallelism, interleaved pipelines, gradient
// accumulation, Megatron's tied embedding).
#include "sim_checks.h"
#include "io/report_json.h"
#include "sim/simulator.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

using namespace prism;
using namespace prism::test;
using nlohmann::json;

namespace {

// RoCE records from NIC address a to b (start, end, bytes).
using Record = std::tuple<std::int64_t, std::int64_t, std::uint64_t>;

std::vector<Record> records(const sim::SimResult& r, const std::string& a, const std::string& b) {
    std::vector<Record> out;
    const auto ips = endpointTexts(r.flows);
    for (std::size_t i = 0; i < r.flows.size(); ++i)
        if (r.flows.isRoce(i) && ips[r.flows.src[i]] == a && ips[r.flows.dst[i]] == b)
            out.emplace_back(r.flows.startNs[i], r.flows.end(i), r.flows.bytes[i]);
    return out;
}

// Lossless and skew-free, so that records are exactly the transfers.
sim::SimConfig exact(const std::string& name, std::uint64_t seed) {
    auto c = preset(name, seed);
    c.lossRate = 0.0;
    c.maxSkewNs = 0;
    return c;
}

} // namespace

class TestSimWorkloads : public QObject {
    Q_OBJECT

private slots:
    void sharedHostsJobsUseIdenticalHostsAndDisjointGpus() {
        const auto c = preset("shared-hosts", 4);
        const auto r = sim::simulate(c);
        QCOMPARE(r.truth.jobs.size(), std::size_t(2));
        const JobInfo& a = r.truth.jobs[0];
        const JobInfo& b = r.truth.jobs[1];
        QCOMPARE(a.tp, 4);
        QCOMPARE(b.tp, 4);
        QCOMPARE(std::set<std::string>(a.hosts.begin(), a.hosts.end()),
                 std::set<std::string>(b.hosts.begin(), b.hosts.end()));
        std::set<std::string> ga(a.gpus.begin(), a.gpus.end());
        for (const std::string& ip : b.gpus) QVERIFY(!ga.count(ip));
        // Both run at the same time.
        QVERIFY(a.startNs < b.endNs && b.startNs < a.endNs);
    }

    void twoJobsHaveDifferentShapesAndOneRunsInsideTheCapture() {
        const auto r = sim::simulate(preset("two-jobs", 2));
        QCOMPARE(r.truth.jobs.size(), std::size_t(2));
        const JobInfo& a = r.truth.jobs[0];
        const JobInfo& b = r.truth.jobs[1];
        QVERIFY(std::tie(a.tp, a.pp, a.dp) != std::tie(b.tp, b.pp, b.dp));
        std::set<std::string> ha(a.hosts.begin(), a.hosts.end());
        for (const std::string& h : b.hosts) QVERIFY(!ha.count(h));
        const std::int64_t first = r.flows.startNs.front();
        const std::int64_t last = r.flows.lastEnd();
        const std::int64_t margin = 100'000'000;
        QVERIFY((b.startNs > first + margin || a.startNs > first + margin) &&
                (b.endNs < last - margin || a.endNs < last - margin));
        std::vector<double> da, db;
        for (const StepInfo& s : a.steps) da.push_back(double(s.durationNs()));
        for (const StepInfo& s : b.steps) db.push_back(double(s.durationNs()));
        QVERIFY(std::abs(median(da) - median(db)) > 0.1 * std::max(median(da), median(db)));
    }

    void reuseRunsASecondJobOnTheSameGpusAfterTheFirst() {
        const auto r = sim::simulate(preset("reuse", 2));
        QCOMPARE(r.truth.jobs.size(), std::size_t(2));
        const JobInfo& a = r.truth.jobs[0];
        const JobInfo& b = r.truth.jobs[1];
        QCOMPARE(std::set<std::string>(a.gpus.begin(), a.gpus.end()),
                 std::set<std::string>(b.gpus.begin(), b.gpus.end()));
        QVERIFY(b.startNs > a.endNs);
        QVERIFY(std::tie(a.tp, a.pp, a.dp) != std::tie(b.tp, b.pp, b.dp));
    }

    void shapesOfTheParallelismPresetsAreAsNamed() {
        const auto dp = preset("pure-dp");
        QCOMPARE(dp.jobs[0].pp, 1);
        QVERIFY(dp.jobs[0].dp > 1);
        const auto pp = preset("pure-pp");
        QCOMPARE(pp.jobs[0].dp, 1);
        QVERIFY(pp.jobs[0].pp > 1);
        QCOMPARE(preset("deep-pipeline").jobs[0].pp, 8);
        const auto t = preset("tiny");
        QCOMPARE(t.jobs.size(), std::size_t(1));
        QVERIFY(t.hosts <= 4);
        QCOMPARE(std::tie(t.jobs[0].tp, t.jobs[0].pp, t.jobs[0].dp), std::make_tuple(8, 2, 2));
        const auto an = preset("anomalies");
        std::set<std::string> kinds;
        for (const auto& a : an.anomalies) kinds.insert(a.kind);
        QCOMPARE(kinds, (std::set<std::string>{"slow_rank", "slow_link", "slow_step"}));
        QVERIFY(an.jobs.size() >= 2);
    }

    void largePresetPromisesAThousandGpusAndFiveMillionRecords() {
        const auto c = preset("large");
        sim::validate(c);
        int gpus = 0;
        for (const auto& j : c.jobs) gpus += j.gpuCount();
        QVERIFY(gpus >= 1024);
        QVERIFY(c.gpuCount() >= 1024);
        QVERIFY(sim::estimateRoceRecords(c) >= 5'000'000);
    }

    void sharedNicsListEachNicOnceAndCountEveryGpu() {
        const auto c = preset("shared-nics", 2);
        QCOMPARE(c.gpusPerNic, 2);
        const auto r = sim::simulate(c);
        // The topology: 4 NICs per host, each serving two GPUs (written in the list form).
        QCOMPARE(int(r.topology.nics.size()), c.hosts * c.gpusPerHost / 2);
        for (const Nic& n : r.topology.nics) QCOMPARE(int(n.gpus.size()), 2);
        const JobInfo& j = r.truth.jobs[0];
        QCOMPARE(std::set<std::string>(j.gpus.begin(), j.gpus.end()).size(), j.gpus.size());
        int gpus = 0;
        for (const std::string& ip : j.gpus)
            gpus += int(r.topology.nics[*r.topology.nicByIp(*IpAddr::parse(ip))].gpus.size());
        QCOMPARE(gpus, j.tp * j.pp * j.dp);
        QCOMPARE(int(j.gpus.size()) * 2, j.tp * j.pp * j.dp);
        // Two ranks behind one NIC pair: each has its own connections, so the pair shows twice the QPs.
        const auto f = flowsByJob(r, tolerance(c));
        std::size_t most = 0;
        for (const auto& [pair, ports] : f[0].ports) most = std::max(most, ports.size());
        QCOMPARE(int(most), 2 * c.jobs[0].channels);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        sim::writeCapture(r, tmp.path().toStdString());
        const json topo = json::parse(readAll(tmp.path().toStdString() + "/topology.json"));
        QVERIFY(topo.dump().find("\"gpus\":[0,1]") != std::string::npos);
    }

    void checkpointsAreOnePeriodicStallWithItsOccurrences() {
        const auto c = preset("checkpoints", 3);
        const sim::JobSpec& spec = c.jobs[0];
        QVERIFY(spec.checkpointEvery > 0);
        const auto r = sim::simulate(c);
        const JobInfo& j = r.truth.jobs[0];
        QCOMPARE(j.anomalies.size(), std::size_t(1));
        const Finding& f = j.anomalies[0];
        QCOMPARE(f.kind, std::string("periodic_stall"));
        QCOMPARE(f.periodSteps, spec.checkpointEvery);
        std::vector<int> expected;
        for (int k = spec.checkpointEvery; k < spec.steps; k += spec.checkpointEvery) expected.push_back(k);
        QCOMPARE(f.occurrences, expected);
        QCOMPARE(f.firstStep, expected.front());
        QCOMPARE(f.lastStep, expected.back());
        // Exactly the stalled steps are longer than usual, by about the pause.
        std::vector<double> d;
        for (const StepInfo& s : j.steps) d.push_back(double(s.durationNs()));
        const double usual = median(d);
        for (const StepInfo& s : j.steps) {
            const bool stalled = std::find(expected.begin(), expected.end(), s.index) != expected.end();
            const double extra = double(s.durationNs()) - usual;
            if (stalled)
                QVERIFY(extra > 0.7 * double(spec.checkpointPauseNs) && extra < 1.3 * double(spec.checkpointPauseNs));
            else
                QVERIFY(extra < 0.2 * usual);
        }
        const json t = truthToJson(r.truth);
        QCOMPARE(t["jobs"][0]["anomalies"][0]["period_steps"].get<int>(), spec.checkpointEvery);
        QCOMPARE(t["jobs"][0]["anomalies"][0]["occurrences"].get<std::vector<int>>(), expected);
    }

    void aRestartRunsOnTheSameGpusWithNewConnections() {
        const auto c = preset("restart", 2);
        const auto r = sim::simulate(c);
        checkTruth(c, r, tolerance(c));
        if (QTest::currentTestFailed()) return;
        const JobInfo& a = r.truth.jobs[0];
        const JobInfo& b = r.truth.jobs[1];
        QCOMPARE(b.restartOf, a.id);
        QVERIFY(a.restartOf.empty());
        QCOMPARE(std::set<std::string>(a.gpus.begin(), a.gpus.end()),
                 std::set<std::string>(b.gpus.begin(), b.gpus.end()));
        QVERIFY(b.startNs > a.endNs + 30'000'000'000);
        QCOMPARE(truthToJson(r.truth)["jobs"][1]["restart_of"].get<std::string>(), a.id);
        // The crash cut a step short: the first run has flows after its last full step, but no DP sync.
        const auto f = flowsByJob(r, tolerance(c));
        std::size_t after = 0, dpAfter = 0;
        for (const Span& s : f[0].all) after += s.start > a.steps.back().endNs + tolerance(c);
        for (const Span& s : f[0].dp) dpAfter += s.start > a.steps.back().endNs + tolerance(c);
        QVERIFY(after > 0);
        QCOMPARE(dpAfter, std::size_t(0));
        QCOMPARE(int(a.steps.size()), c.jobs[0].steps);
        // New QPs: on every NIC pair both runs use, no source port of the first run comes back.
        std::size_t shared = 0;
        for (const auto& [pair, ports] : f[1].ports) {
            auto it = f[0].ports.find(pair);
            if (it == f[0].ports.end()) continue;
            ++shared;
            for (std::uint16_t p : ports) QVERIFY2(!it->second.count(p), "a restart reuses a port of the crashed run");
        }
        QVERIFY(shared > 0);
    }

    void longRunIsADayOfThirtySecondStepsWithCheckpoints() {
        const auto c = preset("long-run", 1);
        const sim::JobSpec& spec = c.jobs[0];
        QVERIFY(spec.steps >= 2000);
        QCOMPARE(spec.checkpointEvery, 500);
        QCOMPARE(c.gpusPerNic, 2);
        QCOMPARE(std::tie(spec.tp, spec.pp, spec.dp), std::make_tuple(8, 1, 4));
        const auto r = sim::simulate(c);
        QVERIFY2(r.flows.size() < 3'000'000, qPrintable(QString::number(r.flows.size())));
        const JobInfo& j = r.truth.jobs[0];
        QCOMPARE(int(j.steps.size()), spec.steps);
        std::vector<double> d;
        for (const StepInfo& s : j.steps) d.push_back(double(s.durationNs()));
        QVERIFY(median(d) >= 30e9);
        QCOMPARE(int(j.gpus.size()), 16); // 4 hosts x 4 shared NICs
        QCOMPARE(j.anomalies.size(), std::size_t(1));
        QCOMPARE(j.anomalies[0].occurrences, (std::vector<int>{500, 1000, 1500}));
        QVERIFY(j.endNs - j.startNs > std::int64_t(24) * 3600 * 1'000'000'000);
        // The DP sync is seconds, not milliseconds, a realistic fraction of the step it ends.
        const auto f = flowsByJob(r, tolerance(c));
        const StepInfo& step = j.steps[1];
        std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
        for (const Span& s : f[0].dp)
            if (s.start >= step.startNs && s.end <= step.endNs + tolerance(c)) {
                first = std::min(first, s.start);
                last = std::max(last, s.end);
            }
        QVERIFY(last > first);
        QVERIFY2(last - first > 500'000'000 && double(last - first) < 0.1 * double(step.durationNs()),
                 qPrintable(QStringLiteral("DP sync %1 ns of a %2 ns step").arg(last - first).arg(step.durationNs())));
    }

    void aDistributedOptimizerEndsStepsAtTheReduceScatterAndGathersAfterIt() {
        for (const char* name : {"zero1", "megatron-64", "megatron-8"}) {
            const auto c = exact(name, 2);
            QVERIFY(c.jobs[0].distributedOptimizer);
            const auto r = sim::simulate(c);
            checkTruth(c, r, 0);
            if (QTest::currentTestFailed()) return;
            const JobInfo& j = r.truth.jobs[0];
            const auto f = flowsByJob(r, 0, &c);
            const std::int64_t pipeline = std::int64_t(c.jobs[0].microBatches) * c.jobs[0].forwardNs;
            for (std::size_t k = 1; k < j.steps.size(); ++k) {
                // Two DP bursts per step: the all-gather right after the previous step's end (the optimizer
                // between them), and the reduce-scatter that ends the step, the pipeline in between.
                std::vector<Span> dp;
                for (const Span& s : f[0].dp)
                    if (s.start >= j.steps[k].startNs && s.end <= j.steps[k].endNs) dp.push_back(s);
                QVERIFY(!dp.empty());
                std::sort(dp.begin(), dp.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
                QVERIFY(dp.front().start > j.steps[k].startNs + c.jobs[0].optimizerNs / 2);
                std::int64_t reach = dp.front().end;
                int bursts = 1;
                for (const Span& s : dp) {
                    if (s.start > reach + pipeline / 2) ++bursts;
                    reach = std::max(reach, s.end);
                }
                QVERIFY2(bursts == 2,
                         qPrintable(QStringLiteral("%1 step %2: %3 DP bursts").arg(name).arg(k).arg(bursts)));
                QCOMPARE(reach, j.steps[k].endNs);
            }
        }
    }

    void fsdpSpreadsGathersAndReduceScattersThroughTheStep() {
        const auto c = exact("fsdp", 1);
        QVERIFY(c.jobs[0].zero3);
        const auto r = sim::simulate(c);
        const JobInfo& j = r.truth.jobs[0];
        const auto f = flowsByJob(r, 0, &c);
        const StepInfo& step = j.steps[5];
        const std::int64_t middle = step.startNs + step.durationNs() / 2;
        std::size_t early = 0, late = 0;
        std::int64_t last = 0;
        for (const Span& s : f[0].dp)
            if (s.start >= step.startNs && s.end <= step.endNs) {
                (s.end < middle ? early : late) += 1;
                last = std::max(last, s.end);
            }
        QVERIFY2(early > 0 && late > 0, "DP traffic in the forward half and the backward half");
        QCOMPARE(last, step.endNs);
        QVERIFY(f[0].pp.empty());
    }

    void expertParallelAllToAllStaysInsideItsEpGroups() {
        for (const char* name : {"moe", "moe-ep-lt-dp"}) {
            const auto c = exact(name, 1);
            const int e = c.jobs[0].expertParallel, dp = c.jobs[0].dp;
            const auto r = sim::simulate(c);
            checkTruth(c, r, 0);
            if (QTest::currentTestFailed()) return;
            const JobInfo& j = r.truth.jobs[0];
            QCOMPARE(int(j.dpGroups.size()), j.tp * j.pp); // the truth groups are DP groups still
            const auto& g = j.dpGroups[0];
            std::vector<std::uint64_t> sizes;
            for (int a = 0; a < dp; ++a)
                for (int b = 0; b < dp; ++b) {
                    if (a == b) continue;
                    const auto recs = records(r, g[std::size_t(a)], g[std::size_t(b)]);
                    const bool ring = b == (a + 1) % dp;
                    const bool sameEp = a / e == b / e;
                    QVERIFY2(recs.empty() == !(ring || sameEp),
                             qPrintable(QStringLiteral("%1: DP ranks %2 -> %3").arg(name).arg(a).arg(b)));
                    if (sameEp && !ring)
                        for (const auto& rec : recs) sizes.push_back(std::get<2>(rec));
                }
            // Token routing is uneven: all-to-all shares vary.
            QVERIFY(sizes.size() > 10);
            std::sort(sizes.begin(), sizes.end());
            QVERIFY(sizes[sizes.size() * 9 / 10] > 2 * sizes[sizes.size() / 10]);
        }
    }

    void expertParallelPeersWaitForTheirSlowestMember() {
        // A GPU of DP replica 0 computes twice as long: with all-to-alls its EP peer (replica 1) keeps its pace,
        // without them replica 1 runs as before.
        auto peerSpan = [](bool experts, bool slow) {
            auto c = exact("moe", 1);
            if (!experts) c.jobs[0].expertParallel = 0;
            if (slow) c.anomalies = {{"slow_rank", 0, c.jobs[0].hosts[0], 0, 0, c.jobs[0].steps - 1, 2.0, 0}};
            const auto r = sim::simulate(c);
            const JobInfo& j = r.truth.jobs[0];
            const auto& chain = j.ppChains[std::size_t(j.tp)]; // replica 1, TP rank 0
            const StepInfo& step = j.steps[5];
            std::int64_t last = 0;
            for (const Record& rec : records(r, chain[0], chain[1]))
                if (std::get<0>(rec) >= step.startNs && std::get<1>(rec) <= step.endNs)
                    last = std::max(last, std::get<1>(rec) - step.startNs);
            return double(last);
        };
        QVERIFY(peerSpan(true, true) > 1.3 * peerSpan(true, false));
        QVERIFY(peerSpan(false, true) < 1.1 * peerSpan(false, false));
    }

    void interleavedPipelinesSendFromTheLastStageToTheFirst() {
        for (const char* name : {"interleaved", "interleaved-nodp"}) {
            const auto c = exact(name, 1);
            QVERIFY(c.jobs[0].virtualStages > 1);
            const auto r = sim::simulate(c);
            checkTruth(c, r, 0);
            if (QTest::currentTestFailed()) return;
            const JobInfo& j = r.truth.jobs[0];
            const auto& chain = j.ppChains[0];
            // Forward: the last stage hands stage 0 its next chunk; backward, gradients go the other way.
            const auto wrap = records(r, chain.back(), chain.front());
            const auto back = records(r, chain.front(), chain.back());
            const int m = c.jobs[0].microBatches, v = c.jobs[0].virtualStages;
            QCOMPARE(int(wrap.size()), (v - 1) * m * c.jobs[0].channels * c.jobs[0].steps);
            QCOMPARE(back.size(), wrap.size());
            // Between neighbours, every chunk boundary: v forwards and v backwards per micro-batch.
            QCOMPARE(int(records(r, chain[0], chain[1]).size()), v * m * c.jobs[0].channels * c.jobs[0].steps);
        }
        const auto plain = sim::simulate(exact("pure-pp", 1));
        const auto& chain = plain.truth.jobs[0].ppChains[0];
        QVERIFY(records(plain, chain.back(), chain.front()).empty());
    }

    void interleavedSchedulesOfTwoToFourChunksRunToTheEnd() {
        // Megatron's interleaved order has no deadlock for any pp, chunk count and micro-batches divisible by pp;
        // a wrong order would stall the schedule (logic_error) or lose operations (steps without their flows).
        for (int pp : {2, 4, 8})
            for (int v : {2, 3, 4})
                for (int rounds : {1, 2, 4}) {
                    sim::SimConfig c;
                    c.hosts = pp;
                    c.lossRate = 0.0;
                    c.maxSkewNs = 0;
                    sim::JobSpec j;
                    j.name = "il";
                    j.pp = pp;
                    j.hosts.resize(std::size_t(pp));
                    std::iota(j.hosts.begin(), j.hosts.end(), 0);
                    j.microBatches = pp * rounds;
                    j.virtualStages = v;
                    j.steps = 3;
                    j.channels = 1;
                    c.jobs = {j};
                    const auto r = sim::simulate(c);
                    checkTruth(c, r, 0);
                    if (QTest::currentTestFailed()) return;
                    const auto& chain = r.truth.jobs[0].ppChains[0];
                    // Stage 0 sends forwards to stage 1 for every chunk (v per micro-batch) and gradients back
                    // around the ring for every chunk but the first (v - 1); the last stage, forwards around the
                    // ring (v - 1) and, when it is stage 1, gradients for every chunk (v). Each step.
                    const int m = j.microBatches * j.steps;
                    const int neighbour = v * m + (pp == 2 ? (v - 1) * m : 0);
                    const int around = (v - 1) * m + (pp == 2 ? v * m : 0);
                    QCOMPARE(int(records(r, chain[0], chain[1]).size()), neighbour);
                    QCOMPARE(int(records(r, chain.back(), chain.front()).size()), around);
                }
    }

    void gradientAccumulationRunsSeveralPipelineRoundsPerSync() {
        const auto c = exact("grad-accum", 1);
        const sim::JobSpec& s = c.jobs[0];
        QVERIFY(s.accumulation > 1);
        const auto r = sim::simulate(c);
        checkTruth(c, r, 0);
        if (QTest::currentTestFailed()) return;
        const auto f = flowsByJob(r, 0, &c);
        // Every TP group on its own host: every stage boundary crosses the network.
        const std::size_t perRound = std::size_t(s.tp * s.dp * (s.pp - 1) * 2 * s.microBatches * s.channels);
        QCOMPARE(f[0].pp.size(), perRound * std::size_t(s.accumulation * s.steps));
        // One DP sync per step: as many DP records as without accumulation.
        auto once = c;
        once.jobs[0].accumulation = 1;
        QCOMPARE(flowsByJob(sim::simulate(once), 0, &once)[0].dp.size(), f[0].dp.size());
    }

    void megatronPresetsTieTheEmbeddingAndNameTheirSlowSpots() {
        const auto c8 = exact("megatron-8", 3);
        const auto r8 = sim::simulate(c8);
        const JobInfo& j = r8.truth.jobs[0];
        QCOMPARE(std::tie(j.tp, j.pp, j.dp), std::make_tuple(1, 4, 2));
        const Finding* stage = anomaly(j, "slow_stage");
        QVERIFY(stage);
        QCOMPARE(stage->stage, j.pp - 1);
        QCOMPARE(stage->firstStep, 0);
        QCOMPARE(stage->lastStep, c8.jobs[0].steps - 1);
        QCOMPARE(stage->factor, c8.jobs[0].lastStageFactor);
        QCOMPARE(truthToJson(r8.truth)["jobs"][0]["anomalies"][0]["stage"].get<int>(), j.pp - 1);
        // The tied embedding: stage 0 and the last stage all-reduce once a step, both ways, before the
        // reduce-scatter that ends the step.
        for (const auto& chain : j.ppChains) {
            const auto tied = records(r8, chain.front(), chain.back());
            std::uint64_t bytes = 0;
            for (const auto& rec : tied) bytes += std::get<2>(rec);
            QCOMPARE(bytes, std::uint64_t(c8.jobs[0].steps) * c8.jobs[0].embeddingBytes);
            for (const auto& rec : tied) {
                auto it = std::find_if(j.steps.begin(), j.steps.end(),
                                       [&](const StepInfo& s) { return std::get<1>(rec) <= s.endNs; });
                QVERIFY(it != j.steps.end() && std::get<1>(rec) < it->endNs);
            }
        }
        // A slow last stage makes the step longer than the same job without it.
        auto even = c8;
        even.jobs[0].lastStageFactor = 1.0;
        const auto re = sim::simulate(even);
        QVERIFY(re.truth.jobs[0].anomalies.empty());
        QVERIFY(j.steps[5].durationNs() > re.truth.jobs[0].steps[5].durationNs() * 11 / 10);

        const auto c64 = preset("megatron-64", 1);
        QCOMPARE(c64.jobs[0].gpuCount(), 64);
        QCOMPARE(c64.jobs[0].microBatches, 32);
        QVERIFY(c64.jobs[0].tiedEmbedding && c64.jobs[0].distributedOptimizer);
        QCOMPARE(c64.anomalies.size(), std::size_t(1));
        QCOMPARE(c64.anomalies[0].kind, std::string("slow_rank"));
    }
};

QTEST_GUILESS_MAIN(TestSimWorkloads)
#include "tst_sim_workloads.moc"
