// The simulator is the oracle for the whole engine, so these tests check that its truth really describes its
// traffic: determinism, the truth's invariants on every preset, records (active timeout, loss, clock skew), the
// anomalies, config validation and the files it writes. Each preset's workload: tst_sim_workloads.cpp.
#include "sim_checks.h"
#include "io/capture.h"
#include "io/report_json.h"
#include "model/diagnostics.h"
#include "sim/simulator.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <zlib.h>

using namespace prism;
using namespace prism::test;
using nlohmann::json;

namespace {

using RecordKey = std::tuple<std::int64_t, std::int64_t, std::string, std::string, int, int, int, std::uint64_t,
                             std::uint64_t>;

std::vector<RecordKey> recordKeys(const FlowTable& f) {
    const auto ips = endpointTexts(f);
    std::vector<RecordKey> keys;
    keys.reserve(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
        keys.emplace_back(f.startNs[i], f.end(i), ips[f.src[i]], ips[f.dst[i]], f.srcPort[i], f.dstPort[i], f.proto[i],
                          f.bytes[i], f.packets[i]);
    std::sort(keys.begin(), keys.end());
    return keys;
}

std::vector<std::string> splitCsv(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) out.push_back(field);
    return out;
}

std::string gunzip(const std::string& path) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) return {};
    std::string out;
    char buf[65536];
    int n;
    while ((n = gzread(gz, buf, sizeof buf)) > 0) out.append(buf, std::size_t(n));
    gzclose(gz);
    return out;
}

} // namespace

class TestSimulator : public QObject {
    Q_OBJECT

private slots:
    void theSameSeedGivesIdenticalTablesAndTruth() {
        const auto a = sim::simulate(preset("tiny", 5));
        const auto b = sim::simulate(preset("tiny", 5));
        QCOMPARE(a.flows.size(), b.flows.size());
        QVERIFY(a.flows.startNs == b.flows.startNs);
        QVERIFY(a.flows.durationNs == b.flows.durationNs);
        QVERIFY(a.flows.src == b.flows.src);
        QVERIFY(a.flows.dst == b.flows.dst);
        QVERIFY(a.flows.srcPort == b.flows.srcPort);
        QVERIFY(a.flows.dstPort == b.flows.dstPort);
        QVERIFY(a.flows.proto == b.flows.proto);
        QVERIFY(a.flows.bytes == b.flows.bytes);
        QVERIFY(a.flows.packets == b.flows.packets);
        QCOMPARE(a.flows.endpoints.size(), b.flows.endpoints.size());
        for (std::size_t i = 0; i < a.flows.endpoints.size(); ++i)
            QVERIFY(a.flows.endpoints.at(EndpointId(i)) == b.flows.endpoints.at(EndpointId(i)));
        QCOMPARE(truthToJson(a.truth).dump(), truthToJson(b.truth).dump());
    }

    void aDifferentSeedGivesDifferentTraffic() {
        const auto a = sim::simulate(preset("tiny", 5));
        const auto b = sim::simulate(preset("tiny", 6));
        QVERIFY(a.flows.startNs != b.flows.startNs);
        QVERIFY(truthToJson(a.truth).dump() != truthToJson(b.truth).dump());
    }

    void presetNamesAreAllKnownAndOthersAreRejected() {
        const auto names = sim::presetNames();
        for (const char* n : {"tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies",
                              "reuse", "large", "shared-nics", "restart", "checkpoints", "long-run", "zero1", "fsdp",
                              "moe", "moe-ep-lt-dp", "interleaved", "interleaved-nodp", "grad-accum", "megatron-64",
                              "megatron-8"})
            QVERIFY2(std::find(names.begin(), names.end(), n) != names.end(), n);
        for (const std::string& n : names) {
            auto c = sim::makePreset(n, 3);
            QVERIFY2(c.has_value(), n.c_str());
            QCOMPARE(c->preset, n);
            sim::validate(*c); // throws on a preset that does not hold together
        }
        QVERIFY(!sim::makePreset("no-such-preset", 1).has_value());
    }

    void everyPresetHasSelfConsistentTruth_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<quint64>("seed");
        for (const std::string& n : sim::presetNames()) {
            if (n == "large" || n == "long-run") continue; // too big for a unit test; see their own tests
            for (quint64 seed : {1ull, 2ull})
                QTest::newRow(QStringLiteral("%1/%2").arg(n.c_str()).arg(seed).toUtf8().constData())
                    << QString::fromStdString(n) << seed;
        }
    }

    void everyPresetHasSelfConsistentTruth() {
        QFETCH(QString, name);
        QFETCH(quint64, seed);
        const auto c = preset(name.toStdString(), seed);
        const auto r = sim::simulate(c);
        checkTruth(c, r, tolerance(c));
        if (QTest::currentTestFailed()) return;
        // The sizing estimate (no loss, nominal speed) is close to what was produced.
        std::size_t roce = 0;
        for (std::size_t i = 0; i < r.flows.size(); ++i) roce += r.flows.isRoce(i);
        const double expected = double(sim::estimateRoceRecords(c)) * (1.0 - c.lossRate);
        QVERIFY2(std::abs(double(roce) - expected) < 0.1 * expected,
                 qPrintable(QStringLiteral("%1 RoCE records, %2 estimated").arg(roce).arg(expected)));
        // Small presets stay small: samples and CI (all-to-alls, interleaving and Megatron's 32 micro-batches per
        // step multiply the records of the production styles).
        const bool heavy = name.startsWith("moe") || name.startsWith("interleaved") || name == "fsdp";
        const std::size_t limit = name.startsWith("megatron") ? 300'000 : heavy ? 100'000 : 40'000;
        QVERIFY2(r.flows.size() < limit, qPrintable(QStringLiteral("%1 records").arg(r.flows.size())));
    }

    void withoutLossOrSkewStepEndsAreExactlyTheLastFlowEnds() {
        for (const char* n : {"tiny", "pure-pp", "shared-hosts"}) {
            auto c = preset(n, 4);
            c.lossRate = 0.0;
            c.maxSkewNs = 0;
            checkTruth(c, sim::simulate(c), 0);
            if (QTest::currentTestFailed()) return;
        }
    }

    void aTp4JobOnWholeHostsKeepsIntraHostTrafficOffTheNetwork() {
        sim::SimConfig c;
        c.hosts = 2;
        sim::JobSpec j;
        j.name = "tp4-whole";
        j.tp = 4;
        j.pp = 2;
        j.dp = 2;
        j.hosts = {0, 1};
        j.steps = 6;
        j.microBatches = 4;
        c.jobs = {j};
        const auto r = sim::simulate(c);
        checkTruth(c, r, tolerance(c));
        if (QTest::currentTestFailed()) return;
        // Two TP groups per host: the DP pairs are inside a host (NVLink), only PP crosses hosts.
        const auto f = flowsByJob(r, tolerance(c));
        QVERIFY(f[0].dp.empty());
        QVERIFY(!f[0].pp.empty());
        QCOMPARE(r.truth.jobs[0].gpus.size(), std::size_t(16));
    }

    void recordsNeverOutlastTheActiveTimeoutAndKeepTheirBytes() {
        auto c = preset("tiny", 2);
        c.lossRate = 0.0;
        c.activeTimeoutNs = 200'000; // shorter than a DP bucket, so buckets are split
        const auto r = sim::simulate(c);
        std::uint64_t roceBytes = 0;
        for (std::size_t i = 0; i < r.flows.size(); ++i) {
            QVERIFY(r.flows.end(i) - r.flows.startNs[i] <= c.activeTimeoutNs);
            if (r.flows.isRoce(i)) roceBytes += r.flows.bytes[i];
        }
        // tiny puts each TP group on its own host, so every PP and DP transfer crosses the network.
        const sim::JobSpec& j = c.jobs[0];
        QCOMPARE(j.gpuCount(), 8 * int(j.hosts.size()));
        const std::uint64_t pp = std::uint64_t(j.tp * j.dp * (j.pp - 1)) * 2 * std::uint64_t(j.microBatches) *
                                 (j.activationBytes / std::uint64_t(j.tp));
        std::uint64_t perRing = 0;
        for (int b = 0; b < j.buckets; ++b) {
            const std::uint64_t bucket = j.gradientBytes / std::uint64_t(j.buckets) +
                                         (b == j.buckets - 1 ? j.gradientBytes % std::uint64_t(j.buckets) : 0);
            const std::uint64_t chunk = (bucket + std::uint64_t(j.dp) - 1) / std::uint64_t(j.dp);
            perRing += std::uint64_t(j.dp) * chunk * std::uint64_t(2 * (j.dp - 1));
        }
        const std::uint64_t dp = std::uint64_t(j.pp * j.tp) * perRing;
        QCOMPARE(roceBytes, std::uint64_t(j.steps) * (pp + dp));
    }

    void lossDropsTheConfiguredShareAndNothingElseChanges() {
        auto c = preset("tiny", 3);
        c.lossRate = 0.0;
        const auto full = sim::simulate(c);
        c.lossRate = 0.2;
        const auto lossy = sim::simulate(c);
        const double kept = double(lossy.flows.size()) / double(full.flows.size());
        QVERIFY2(kept > 0.75 && kept < 0.85, qPrintable(QString::number(kept)));
        // Loss has its own random stream: the surviving records are exactly records of the full capture.
        const auto all = recordKeys(full.flows);
        const auto some = recordKeys(lossy.flows);
        QVERIFY(std::includes(all.begin(), all.end(), some.begin(), some.end()));
        QCOMPARE(truthToJson(full.truth).dump(), truthToJson(lossy.truth).dump());
    }

    void clockSkewIsOneBoundedOffsetPerLeaf() {
        auto c = preset("two-jobs", 3);
        c.lossRate = 0.0;
        c.maxSkewNs = 0;
        const auto flat = sim::simulate(c);
        c.maxSkewNs = 20'000;
        const auto skewed = sim::simulate(c);
        QCOMPARE(flat.flows.size(), skewed.flows.size());
        // Order both by (src, dst, ports, start): one source's records keep their order under a constant shift.
        auto order = [](const FlowTable& f) {
            const auto ips = endpointTexts(f);
            std::vector<std::tuple<std::string, std::string, int, int, std::int64_t, std::int64_t>> v;
            for (std::size_t i = 0; i < f.size(); ++i)
                v.emplace_back(ips[f.src[i]], ips[f.dst[i]], f.srcPort[i], f.dstPort[i], f.startNs[i],
                               f.end(i) - f.startNs[i]);
            std::sort(v.begin(), v.end());
            return v;
        };
        const auto a = order(flat.flows);
        const auto b = order(skewed.flows);
        std::map<std::string, std::int64_t> leafOffset;
        for (std::size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(std::get<0>(a[i]), std::get<0>(b[i]));
            QCOMPARE(std::get<5>(a[i]), std::get<5>(b[i])); // durations are untouched
            auto nic = flat.topology.nicByIp(*IpAddr::parse(std::get<0>(a[i])));
            if (!nic) continue; // stamped by the other end's leaf
            const std::string& leaf = flat.topology.nics[std::size_t(*nic)].switchName;
            const std::int64_t off = std::get<4>(b[i]) - std::get<4>(a[i]);
            QVERIFY(std::abs(off) <= c.maxSkewNs);
            auto [it, inserted] = leafOffset.emplace(leaf, off);
            QVERIFY2(it->second == off, "one offset per exporting leaf");
        }
        std::set<std::int64_t> distinct;
        for (const auto& [leaf, off] : leafOffset) distinct.insert(off);
        QVERIFY2(distinct.size() > 1, "leaves have different clocks");
    }

    void slowStepIsLongerThanTheMedianByItsPause() {
        const auto c = preset("anomalies", 1);
        const auto r = sim::simulate(c);
        const JobInfo& j = r.truth.jobs[0];
        const Finding* f = anomaly(j, "slow_step");
        QVERIFY(f);
        const sim::AnomalySpec* spec = nullptr;
        for (const auto& a : c.anomalies)
            if (a.kind == "slow_step") spec = &a;
        QVERIFY(spec);
        QCOMPARE(f->firstStep, spec->firstStep);
        std::vector<double> d;
        for (const StepInfo& s : j.steps) d.push_back(double(s.durationNs()));
        const double med = median(d);
        for (int k = f->firstStep; k <= f->lastStep; ++k)
            QVERIFY2(d[std::size_t(k)] >= med + 0.9 * double(spec->pauseNs),
                     qPrintable(QStringLiteral("step %1: %2 vs median %3").arg(k).arg(d[std::size_t(k)]).arg(med)));
        for (int k = 1; k < int(d.size()); ++k)
            if (k < f->firstStep || k > f->lastStep) QVERIFY(d[std::size_t(k)] < med + 0.5 * double(spec->pauseNs));
    }

    void slowLinkNicCarriesLowerThroughput() {
        const auto c = preset("anomalies", 2);
        const auto r = sim::simulate(c);
        const JobInfo& j = r.truth.jobs[0];
        const Finding* f = anomaly(j, "slow_link");
        QVERIFY(f);
        auto nic = r.topology.nicByIp(*IpAddr::parse(f->ip));
        QVERIFY(nic.has_value());
        QCOMPARE(f->switchName, r.topology.nics[std::size_t(*nic)].switchName);
        QVERIFY(f->factor > 1.0);
        const JobView v(j);
        const auto ips = endpointTexts(r.flows);
        const std::int64_t from = j.steps[std::size_t(f->firstStep)].startNs;
        const std::int64_t to = j.steps[std::size_t(f->lastStep)].endNs;
        std::vector<double> slow, normal, peers;
        for (std::size_t i = 0; i < r.flows.size(); ++i) {
            if (!r.flows.isRoce(i)) continue;
            const std::string& a = ips[r.flows.src[i]];
            const std::string& b = ips[r.flows.dst[i]];
            if (!v.isPp(a, b)) continue; // PP transfers all have one size: a fair comparison
            const double gbps = double(r.flows.bytes[i]) * 8.0 / double(r.flows.end(i) - r.flows.startNs[i]);
            const bool inRange = r.flows.startNs[i] >= from && r.flows.end(i) <= to;
            const bool mine = a == f->ip || b == f->ip;
            (mine ? (inRange ? slow : normal) : (inRange ? peers : normal)).push_back(gbps);
        }
        QVERIFY(!slow.empty() && !normal.empty() && !peers.empty());
        QVERIFY2(median(slow) * f->factor * 0.6 < median(normal),
                 qPrintable(QStringLiteral("slow %1 Gb/s, normal %2 Gb/s").arg(median(slow)).arg(median(normal))));
        QVERIFY(median(slow) * 2.0 < median(peers));
    }

    void slowRankSlowsItsTpGroupAndItsSteps() {
        const auto c = preset("anomalies", 3);
        const auto r = sim::simulate(c);
        const JobInfo& j = r.truth.jobs[0];
        const Finding* f = anomaly(j, "slow_rank");
        QVERIFY(f);
        // The TP group: tp NICs of one host, the slow GPU among them.
        QCOMPARE(int(f->group.size()), j.tp);
        QVERIFY(std::find(f->group.begin(), f->group.end(), f->ip) != f->group.end());
        std::set<int> hosts;
        for (const std::string &ip : f->group)
            hosts.insert(r.topology.nics[std::size_t(*r.topology.nicByIp(*IpAddr::parse(ip)))].host);
        QCOMPARE(hosts.size(), std::size_t(1));

        // Its pace: the gaps between the slow NIC's PP sends within a step grow by about the factor,
        // while a DP peer (same stage and TP rank, other replica) keeps its pace.
        const JobView v(j);
        const auto ips = endpointTexts(r.flows);
        auto paceRatio = [&](const std::string& ip) {
            std::vector<double> in, out;
            for (const StepInfo& s : j.steps) {
                if (s.index == 0) continue;
                std::set<std::int64_t> starts;
                for (std::size_t i = 0; i < r.flows.size(); ++i)
                    if (r.flows.isRoce(i) && ips[r.flows.src[i]] == ip && v.isPp(ip, ips[r.flows.dst[i]]) &&
                        r.flows.startNs[i] >= s.startNs && r.flows.end(i) <= s.endNs)
                        starts.insert(r.flows.startNs[i]);
                std::vector<std::int64_t> st(starts.begin(), starts.end());
                for (std::size_t k = 1; k < st.size(); ++k)
                    (s.index >= f->firstStep && s.index <= f->lastStep ? in : out).push_back(double(st[k] - st[k - 1]));
            }
            return median(in) / median(out);
        };
        const double own = paceRatio(f->ip);
        QVERIFY2(own > 1.25, qPrintable(QString::number(own)));
        for (const auto& g : j.dpGroups) {
            if (std::find(g.begin(), g.end(), f->ip) == g.end()) continue;
            for (const std::string& peer : g)
                if (peer != f->ip) QVERIFY2(paceRatio(peer) < 1.15, qPrintable(QString::fromStdString(peer)));
        }
        // And the job's steps in the range are longer than the others.
        std::vector<double> in, out;
        auto otherAnomaly = [&](int k) {
            for (const Finding& a : j.anomalies)
                if (&a != f && k >= a.firstStep && k <= a.lastStep) return true;
            return false;
        };
        for (const StepInfo& s : j.steps)
            if (s.index > 0 && !otherAnomaly(s.index))
                (s.index >= f->firstStep && s.index <= f->lastStep ? in : out).push_back(double(s.durationNs()));
        QVERIFY(median(in) > 1.2 * median(out));
    }

    // Without a pipeline a slow GPU shows on the network only through expert all-to-all that leaves its host: an
    // EP block of two GPUs on one host exchanges over NVLink, and its ring hop starts with every other member's
    // (random draw 100011: DP 4 on 2 hosts, EP 2, a GPU 2.86x slow: optional). With its EP peer on another host
    // (300182: TP 8 x DP 4 on 4 hosts, EP 2) it is expected.
    void aSlowGpuWithoutPipelineIsExpectedOnlyWhereItsExpertsLeaveTheHost() {
        for (auto [seed, expected] : {std::pair(100011, false), std::pair(300182, true)}) {
            const sim::SimResult r = sim::simulate(sim::randomConfig(std::uint64_t(seed)));
            const Finding* f = anomaly(r.truth.jobs[0], "slow_rank");
            QVERIFY(f);
            QCOMPARE(f->optional, !expected);
        }
    }

    // DP replicas inside each host read as TP (the truth's reading): a slow GPU's TP group is then its stage's
    // ranks on the host, every replica, as the network sees one TP group there (random draw 300198: TP 1 x PP 6 x
    // DP 2, both replicas of a stage on one host, read TP 2 x DP 1).
    void aSlowGpuOfReplicasInsideAHostHasTheHostsStageAsItsGroup() {
        const sim::SimResult r = sim::simulate(sim::randomConfig(300198));
        const JobInfo& j = r.truth.jobs[0];
        QCOMPARE(j.tp, 2);
        QCOMPARE(j.dp, 1);
        const Finding* f = anomaly(j, "slow_rank");
        QVERIFY(f);
        QCOMPARE(f->group.size(), std::size_t(2));
        std::set<int> hosts;
        for (const std::string& ip : f->group)
            hosts.insert(r.topology.nics[std::size_t(*r.topology.nicByIp(*IpAddr::parse(ip)))].host);
        QCOMPARE(hosts.size(), std::size_t(1));
    }

    void oldPresetsAreByteIdenticalToTheirFirstVersion() {
        // FNV-1a of flows.csv, truth.json and topology.json as the simulator wrote them before issue 12's
        // styles were added (seed 1): new features must not move an old preset's traffic or truth.
        const std::map<std::string, std::uint64_t> before = {{"tiny", 0xb2e59d15486e8c77ull},
                                                             {"pure-pp", 0x88c008550398f83cull}};
        for (const auto& [name, expected] : before) {
            QTemporaryDir tmp;
            QVERIFY(tmp.isValid());
            const std::string dir = tmp.path().toStdString();
            sim::writeCapture(sim::simulate(preset(name, 1)), dir);
            std::uint64_t h = 0xcbf29ce484222325ull;
            for (const char* f : {"flows.csv", "truth.json", "topology.json"})
                for (unsigned char ch : readAll(dir + "/" + f)) h = (h ^ ch) * 0x100000001b3ull;
            QVERIFY2(h == expected, name.c_str());
        }
    }

    void invalidConfigsAreRejectedWithAReason() {
        auto base = preset("tiny");
        auto expectInvalid = [](const sim::SimConfig& c, const char* what) {
            try {
                sim::validate(c);
            } catch (const std::invalid_argument& e) {
                return QString(e.what()).contains(what);
            }
            return false;
        };
        auto c = base;
        c.jobs[0].hosts = {0, 1, 2};
        QVERIFY(expectInvalid(c, "do not spread evenly"));
        c = base;
        c.hosts = 8;
        c.jobs[0].hosts = {0, 1, 2, 3, 4, 5, 6, 7};
        QVERIFY(expectInvalid(c, "TP groups must stay inside a host"));
        c = base;
        c.jobs.push_back(c.jobs[0]);
        c.jobs[1].name = "job-b";
        QVERIFY(expectInvalid(c, "shares GPUs"));
        c.jobs[1].startAfterJob = 0; // one after the other is fine
        sim::validate(c);
        c = base;
        c.anomalies = {{"slow_step", 0, 0, 0, 0, 0, 1.0, 1'000'000}};
        QVERIFY(expectInvalid(c, "step 0"));
        c.anomalies = {{"slow_rank", 0, 0, 0, 3, 99, 2.0, 0}};
        QVERIFY(expectInvalid(c, "steps"));
        c.anomalies = {{"slow_disk", 0, 0, 0, 1, 1, 2.0, 0}};
        QVERIFY(expectInvalid(c, "unknown kind"));
        c = base;
        c.jobs[0].hosts = {0};
        c.jobs[0].dp = 1;
        c.jobs[0].pp = 1;
        QVERIFY(expectInvalid(c, "one host"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sim::simulate(c));
        c = base;
        c.gpusPerNic = 3;
        QVERIFY(expectInvalid(c, "gpusPerNic"));
        c = base;
        c.jobs[0].checkpointEvery = 5;
        QVERIFY(expectInvalid(c, "checkpointPauseNs"));
        c.jobs[0].checkpointEvery = c.jobs[0].steps;
        c.jobs[0].checkpointPauseNs = 1'000'000;
        QVERIFY(expectInvalid(c, "leaves no stall"));
        c = base;
        c.jobs[0].restart = true;
        QVERIFY(expectInvalid(c, "restart"));
        c = base;
        c.jobs[0].zero3 = true; // tiny has pp 2
        QVERIFY(expectInvalid(c, "ZeRO-3"));
        c = base;
        c.jobs[0].expertParallel = 3;
        QVERIFY(expectInvalid(c, "expertParallel"));
        c = base;
        c.jobs[0].virtualStages = 2;
        c.jobs[0].microBatches = 3;
        QVERIFY(expectInvalid(c, "virtualStages"));
        c = base;
        c.jobs[0].pp = 1;
        c.jobs[0].dp = 4;
        c.jobs[0].tiedEmbedding = true;
        QVERIFY(expectInvalid(c, "tied embedding"));
        c.jobs[0].tiedEmbedding = false;
        c.jobs[0].lastStageFactor = 1.5;
        QVERIFY(expectInvalid(c, "lastStageFactor"));
        c.jobs[0].lastStageFactor = 1.0;
        c.jobs[0].dp = 1;
        c.jobs[0].pp = 4;
        c.jobs[0].distributedOptimizer = true;
        QVERIFY(expectInvalid(c, "distributed optimizer"));
    }

    void progressRisesToOneAndCancelStops() {
        const auto c = preset("tiny");
        std::vector<double> seen;
        sim::simulate(c, [&](double f) {
            seen.push_back(f);
            return true;
        });
        QVERIFY(seen.size() > 2);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QCOMPARE(seen.back(), 1.0);
        int calls = 0;
        QVERIFY_THROWS_EXCEPTION(Cancelled, sim::simulate(c, [&](double) { return ++calls < 3; }));
        QCOMPARE(calls, 3);
    }

    void writeCaptureWritesTheThreeFilesInTheDesignFormat() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string dir = tmp.filePath("capture/nested").toStdString();
        const auto r = sim::simulate(preset("two-jobs", 3));
        sim::writeCapture(r, dir);

        // flows.csv: the docs/FORMATS.md header, one row per record, in export (end time) order.
        std::ifstream in(dir + "/flows.csv");
        QVERIFY(in.good());
        std::string line;
        std::getline(in, line);
        QCOMPARE(QString::fromStdString(line),
                 QStringLiteral("start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets"));
        std::size_t rows = 0, roce = 0;
        std::uint64_t bytes = 0, tableBytes = 0;
        std::int64_t prevEnd = std::numeric_limits<std::int64_t>::min();
        while (std::getline(in, line)) {
            const auto f = splitCsv(line);
            QCOMPARE(f.size(), std::size_t(9));
            const std::int64_t start = std::stoll(f[0]);
            const std::int64_t end = std::stoll(f[1]);
            QVERIFY(end >= start);
            QVERIFY(end >= prevEnd);
            prevEnd = end;
            QVERIFY(IpAddr::parse(f[2]) && IpAddr::parse(f[3]));
            if (f[5] == "4791" && f[6] == "17") ++roce;
            bytes += std::stoull(f[7]);
            ++rows;
        }
        QCOMPARE(rows, r.flows.size());
        std::size_t tableRoce = 0;
        for (std::size_t i = 0; i < r.flows.size(); ++i) {
            tableRoce += r.flows.isRoce(i);
            tableBytes += r.flows.bytes[i];
        }
        QCOMPARE(roce, tableRoce);
        QCOMPARE(bytes, tableBytes);

        // topology.json: hosts with NICs (ip, gpu, rail, switch), switches with tier and uplinks.
        const json topo = json::parse(readAll(dir + "/topology.json"));
        QCOMPARE(topo.at("hosts").size(), r.topology.hosts.size());
        std::set<std::string> leaves, spines;
        for (const json& s : topo.at("switches")) {
            const std::string tier = s.at("tier");
            (tier == "leaf" ? leaves : spines).insert(s.at("name").get<std::string>());
            QVERIFY(s.at("uplinks").is_array());
            if (tier == "leaf") QVERIFY(!s.at("uplinks").empty());
        }
        QVERIFY(!spines.empty());
        std::size_t nics = 0;
        for (const json& h : topo.at("hosts")) {
            QVERIFY(h.at("name").get<std::string>().rfind("node-", 0) == 0);
            for (const json& n : h.at("nics")) {
                QVERIFY(IpAddr::parse(n.at("ip").get<std::string>()).has_value());
                QCOMPARE(n.at("gpu").get<int>(), n.at("rail").get<int>());
                QVERIFY(leaves.count(n.at("switch").get<std::string>()));
                ++nics;
            }
        }
        QCOMPARE(nics, r.topology.nics.size());

        // truth.json: what truthToJson says, with the docs/FORMATS.md job fields.
        const json truth = json::parse(readAll(dir + "/truth.json"));
        QVERIFY(truth == truthToJson(r.truth));
        for (const json& j : truth.at("jobs"))
            for (const char* key : {"name", "tp", "pp", "dp", "gpus", "hosts", "dp_groups", "pp_chains", "steps",
                                    "anomalies", "start_ns", "end_ns"})
                QVERIFY2(j.contains(key), key);

        // gzip: the same text compressed, and the plain file is gone so readers cannot pick the stale one.
        const std::string plain = readAll(dir + "/flows.csv");
        sim::writeCapture(r, dir, true);
        QVERIFY(!QFile::exists(QString::fromStdString(dir + "/flows.csv")));
        const std::string gz = readAll(dir + "/flows.csv.gz");
        QVERIFY(gz.size() > 2 && std::uint8_t(gz[0]) == 0x1f && std::uint8_t(gz[1]) == 0x8b);
        QVERIFY(gz.size() < plain.size());
        QVERIFY(gunzip(dir + "/flows.csv.gz") == plain);
        QVERIFY(!QFile::exists(QString::fromStdString(dir + "/flows.csv.gz.tmp")));
    }

    void writtenCaptureReadsBackIntoTheSameTableAndTopology() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string dir = tmp.path().toStdString();
        const auto r = sim::simulate(preset("shared-hosts", 2));
        sim::writeCapture(r, dir);
        LoadDiagnostics diag;
        LoadOptions strict;
        strict.strict = true;
        const FlowTable back = readFlowsCsv(dir + "/flows.csv", strict, diag);
        QVERIFY(diag.clean());
        QVERIFY(recordKeys(back) == recordKeys(r.flows));

        const Topology topo = readTopologyJson(dir + "/topology.json");
        QCOMPARE(topo.hosts.size(), r.topology.hosts.size());
        QCOMPARE(topo.nics.size(), r.topology.nics.size());
        QCOMPARE(topo.switches.size(), r.topology.switches.size());
        for (const Nic& n : r.topology.nics) {
            auto i = topo.nicByIp(n.ip);
            QVERIFY(i.has_value());
            const Nic& m = topo.nics[std::size_t(*i)];
            QVERIFY(m.gpus == n.gpus);
            QCOMPARE(m.rail, n.rail);
            QCOMPARE(m.switchName, n.switchName);
            QCOMPARE(topo.hosts[std::size_t(m.host)].name, r.topology.hosts[std::size_t(n.host)].name);
        }
        for (const Switch& s : r.topology.switches) {
            auto i = topo.switchByName(s.name);
            QVERIFY(i.has_value());
            QCOMPARE(topo.switches[std::size_t(*i)].tier, s.tier);
            QVERIFY(topo.switches[std::size_t(*i)].uplinks == s.uplinks);
        }
        const Report truth = readReportFile(dir + "/truth.json");
        QCOMPARE(truth.jobs.size(), r.truth.jobs.size());
        QVERIFY(truth.jobs[1].steps.size() == r.truth.jobs[1].steps.size());
    }

    void nicAddressesAreUniqueAndFollowTheRailPlan() {
        auto c = preset("large");
        const Topology t = sim::buildTopology(c);
        QCOMPARE(int(t.nics.size()), c.gpuCount());
        std::set<IpAddr> seen;
        for (const Nic& n : t.nics) {
            QVERIFY(seen.insert(n.ip).second);
            QVERIFY(!n.ip.v6);
            QCOMPARE(int(n.ip.v4Value() >> 24), 10);
            QCOMPARE(int((n.ip.v4Value() >> 16) & 0xff), n.rail);
            QVERIFY(t.switchByName(n.switchName).has_value());
        }
        QCOMPARE(t.hosts.front().name, std::string("node-0001"));
    }
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "tst_simulator.moc"
