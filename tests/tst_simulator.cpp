// The simulator is the oracle for the whole engine, so these tests check that its truth really describes its
// traffic: shapes, groups, chains, step boundaries, anomalies, placement, and the files it writes.
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
using nlohmann::json;

namespace {

sim::SimConfig preset(const std::string& name, std::uint64_t seed = 1) {
    auto c = sim::makePreset(name, seed);
    if (!c) throw std::runtime_error("unknown preset " + name);
    return *c;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Where each NIC sits in one truth job.
struct JobView {
    const JobInfo* job = nullptr;
    std::map<std::string, int> dpGroup; // ip -> index in dpGroups
    std::map<std::string, std::pair<int, int>> chainPos; // ip -> (chain, stage)
    std::set<std::string> gpus;
    bool ring = false; // the first and the last stage talk too (tied embedding, interleaved pipeline)

    explicit JobView(const JobInfo& j, bool ringPp = false) : job(&j), ring(ringPp) {
        gpus.insert(j.gpus.begin(), j.gpus.end());
        for (int g = 0; g < int(j.dpGroups.size()); ++g)
            for (const std::string& ip : j.dpGroups[std::size_t(g)]) dpGroup[ip] = g;
        for (int c = 0; c < int(j.ppChains.size()); ++c)
            for (int s = 0; s < int(j.ppChains[std::size_t(c)].size()); ++s)
                chainPos[j.ppChains[std::size_t(c)][std::size_t(s)]] = {c, s};
    }
    bool has(const std::string& ip) const { return gpus.count(ip) > 0; }
    bool isDp(const std::string& a, const std::string& b) const {
        auto ia = dpGroup.find(a), ib = dpGroup.find(b);
        return ia != dpGroup.end() && ib != dpGroup.end() && ia->second == ib->second;
    }
    bool isPp(const std::string& a, const std::string& b) const {
        auto ia = chainPos.find(a), ib = chainPos.find(b);
        if (ia == chainPos.end() || ib == chainPos.end() || ia->second.first != ib->second.first) return false;
        const int gap = std::abs(ia->second.second - ib->second.second);
        return gap == 1 || (ring && gap == job->pp - 1);
    }
    bool covers(std::int64_t start, std::int64_t end, std::int64_t tol) const {
        return start >= job->startNs - tol && end <= job->endNs + tol;
    }
};

struct Span {
    std::int64_t start, end;
};

std::vector<std::string> endpointTexts(const FlowTable& f) {
    std::vector<std::string> ips(f.endpoints.size());
    for (std::size_t i = 0; i < ips.size(); ++i) ips[i] = f.endpoints.at(EndpointId(i)).toString();
    return ips;
}

// The DP (or, without DP traffic, PP) flows of each truth job, split by kind.
struct JobFlows {
    std::vector<Span> dp, pp, all;
    std::map<std::pair<EndpointId, EndpointId>, std::set<std::uint16_t>> ports; // source ports per connection
};

// Whether a job's PP traffic closes into a ring (stage 0 with the last stage).
bool ringPp(const sim::JobSpec& j) { return j.tiedEmbedding || j.virtualStages > 1; }

std::vector<JobFlows> flowsByJob(const sim::SimResult& r, std::int64_t tol, const sim::SimConfig* c = nullptr) {
    std::vector<JobView> views;
    for (std::size_t i = 0; i < r.truth.jobs.size(); ++i)
        views.emplace_back(r.truth.jobs[i], c && ringPp(c->jobs[i]));
    std::vector<JobFlows> out(views.size());
    const auto ips = endpointTexts(r.flows);
    for (std::size_t i = 0; i < r.flows.size(); ++i) {
        if (!r.flows.isRoce(i)) continue;
        const std::string& s = ips[r.flows.src[i]];
        const std::string& d = ips[r.flows.dst[i]];
        for (std::size_t j = 0; j < views.size(); ++j) {
            if (!views[j].has(s) || !views[j].has(d) || !views[j].covers(r.flows.startNs[i], r.flows.endNs[i], tol))
                continue;
            Span span{r.flows.startNs[i], r.flows.endNs[i]};
            out[j].all.push_back(span);
            out[j].ports[{r.flows.src[i], r.flows.dst[i]}].insert(r.flows.srcPort[i]);
            if (views[j].isDp(s, d)) out[j].dp.push_back(span);
            if (views[j].isPp(s, d)) out[j].pp.push_back(span);
        }
    }
    return out;
}

// Every truth invariant the engine relies on; `tol` absorbs clock skew and the odd lost record.
void checkTruth(const sim::SimConfig& c, const sim::SimResult& r, std::int64_t tol) {
    const Topology& topo = r.topology;
    QVERIFY2(!r.flows.empty(), "the capture has records");
    QCOMPARE(r.truth.jobs.size(), c.jobs.size());
    QVERIFY(r.flows.isSortedByStart());

    for (std::size_t ji = 0; ji < r.truth.jobs.size(); ++ji) {
        const JobInfo& j = r.truth.jobs[ji];
        const sim::JobSpec& spec = c.jobs[ji];
        QCOMPARE(j.id, spec.name);
        QCOMPARE(j.tp, spec.tp);
        QCOMPARE(j.pp, spec.pp);
        QCOMPARE(j.dp, spec.dp);
        // gpus: distinct topology NICs; their GPU count is tp*pp*dp; hosts are exactly theirs.
        int gpuCount = 0;
        std::set<std::string> hosts;
        for (const std::string& ip : j.gpus) {
            auto addr = IpAddr::parse(ip);
            QVERIFY(addr.has_value());
            auto n = topo.nicByIp(*addr);
            QVERIFY2(n.has_value(), qPrintable(QString::fromStdString(ip + " is not a topology NIC")));
            gpuCount += int(topo.nics[std::size_t(*n)].gpus.size());
            hosts.insert(topo.hosts[std::size_t(topo.nics[std::size_t(*n)].host)].name);
        }
        QCOMPARE(gpuCount, j.tp * j.pp * j.dp);
        QCOMPARE(std::set<std::string>(j.gpus.begin(), j.gpus.end()).size(), j.gpus.size());
        QCOMPARE(std::set<std::string>(j.hosts.begin(), j.hosts.end()), hosts);

        // dp_groups partition the GPUs into tp*pp groups of dp (fewer where GPUs share NICs: a group of NIC
        // addresses several ranks share is listed once).
        const int perNic = c.gpusPerNic;
        QVERIFY(int(j.dpGroups.size()) * perNic >= j.tp * j.pp && int(j.dpGroups.size()) <= j.tp * j.pp);
        if (perNic == 1) QCOMPARE(int(j.dpGroups.size()), j.tp * j.pp);
        std::multiset<std::string> inGroups;
        for (const auto& g : j.dpGroups) {
            QCOMPARE(int(g.size()), j.dp);
            inGroups.insert(g.begin(), g.end());
        }
        QCOMPARE(inGroups, std::multiset<std::string>(j.gpus.begin(), j.gpus.end()));

        // pp_chains: one per (t, d) of length pp, covering every GPU once; none when pp = 1.
        if (j.pp == 1) {
            QVERIFY(j.ppChains.empty());
        } else {
            QCOMPARE(int(j.ppChains.size()) * perNic, j.tp * j.dp);
            std::multiset<std::string> inChains;
            for (const auto& ch : j.ppChains) {
                QCOMPARE(int(ch.size()), j.pp);
                inChains.insert(ch.begin(), ch.end());
            }
            QCOMPARE(inChains, std::multiset<std::string>(j.gpus.begin(), j.gpus.end()));
        }

        // Steps: as many as configured, contiguous and increasing, the first one at the job's first flow.
        QCOMPARE(int(j.steps.size()), spec.steps);
        QCOMPARE(j.steps.front().startNs, j.startNs);
        for (std::size_t k = 0; k < j.steps.size(); ++k) {
            QCOMPARE(j.steps[k].index, int(k));
            QVERIFY(j.steps[k].endNs > j.steps[k].startNs);
            if (k > 0) QCOMPARE(j.steps[k].startNs, j.steps[k - 1].endNs);
        }
        QVERIFY(j.endNs >= j.steps.back().endNs);
        QVERIFY(j.startNs >= c.captureStartNs);
    }

    // RoCE records: between topology NICs of different hosts, inside a single job.
    std::vector<JobView> views;
    for (std::size_t i = 0; i < r.truth.jobs.size(); ++i) views.emplace_back(r.truth.jobs[i], ringPp(c.jobs[i]));
    const auto ips = endpointTexts(r.flows);
    std::size_t roce = 0, other = 0;
    for (std::size_t i = 0; i < r.flows.size(); ++i) {
        if (!r.flows.isRoce(i)) {
            ++other;
            continue;
        }
        ++roce;
        auto s = topo.nicByIp(r.flows.endpoints.at(r.flows.src[i]));
        auto d = topo.nicByIp(r.flows.endpoints.at(r.flows.dst[i]));
        QVERIFY2(s && d, "every UDP/4791 endpoint is a topology NIC");
        QVERIFY2(topo.nics[std::size_t(*s)].host != topo.nics[std::size_t(*d)].host,
                 "traffic inside a host is NVLink, never a RoCE record");
        const std::string& a = ips[r.flows.src[i]];
        const std::string& b = ips[r.flows.dst[i]];
        bool inOneJob = false;
        for (const JobView& v : views)
            inOneJob = inOneJob ||
                       (v.has(a) && v.has(b) && v.covers(r.flows.startNs[i], r.flows.endNs[i], tol) &&
                        (v.isDp(a, b) || v.isPp(a, b)));
        QVERIFY2(inOneJob, qPrintable(QString::fromStdString("RoCE record " + a + " -> " + b +
                                                             " is not a DP or PP pair of one running job")));
        QCOMPARE(r.flows.packets[i], (r.flows.bytes[i] + 4095) / 4096);
    }
    QVERIFY2(roce > 0 && other > 0, "both RoCE traffic and non-RoCE noise are present");

    // A step ends with its last DP flow (its last PP flow without DP traffic); every flow lies in a step.
    const auto byJob = flowsByJob(r, tol, &c);
    for (std::size_t ji = 0; ji < r.truth.jobs.size(); ++ji) {
        const JobInfo& j = r.truth.jobs[ji];
        const JobFlows& f = byJob[ji];
        const std::vector<Span>& marks = !f.dp.empty() ? f.dp : f.pp;
        QVERIFY2(!marks.empty(), "every job has network traffic");
        for (std::size_t k = 0; k < j.steps.size(); ++k) {
            const std::int64_t lo = k == 0 ? j.steps[0].startNs - tol : j.steps[k - 1].endNs + tol;
            const std::int64_t hi = j.steps[k].endNs + tol;
            std::int64_t last = std::numeric_limits<std::int64_t>::min();
            for (const Span& s : marks)
                if (s.end > lo && s.end <= hi) last = std::max(last, s.end);
            QVERIFY2(last != std::numeric_limits<std::int64_t>::min(),
                     qPrintable(QStringLiteral("%1 step %2 has no closing flow").arg(j.id.c_str()).arg(k)));
            QVERIFY2(std::abs(last - j.steps[k].endNs) <= tol,
                     qPrintable(QStringLiteral("%1 step %2 ends %3 ns away from its last flow")
                                    .arg(j.id.c_str())
                                    .arg(k)
                                    .arg(last - j.steps[k].endNs)));
        }
        // NCCL channels: each connection uses its own fixed set of QPs (UDP source ports) for the job's life;
        // ranks sharing a NIC pair each have theirs, and so do the communicators of one pair (DP and EP).
        for (const auto& [pair, ports] : f.ports) {
            if (c.gpusPerNic == 1 && c.jobs[ji].expertParallel == 0)
                QCOMPARE(int(ports.size()), c.jobs[ji].channels);
            else
                QVERIFY(int(ports.size()) % c.jobs[ji].channels == 0);
        }
        std::vector<std::int64_t> ends;
        for (const StepInfo& s : j.steps) ends.push_back(s.endNs);
        for (const Span& s : f.all) {
            auto it = std::lower_bound(ends.begin(), ends.end(), s.end - tol);
            if (it == ends.end() && c.jobs[ji].crashes) continue; // the step the crash cut short
            QVERIFY2(it != ends.end(), "no flow of a job after its last step");
            const StepInfo& st = j.steps[std::size_t(it - ends.begin())];
            QVERIFY2(s.start >= st.startNs - tol, "no flow straddles a step boundary");
        }
    }
}

std::int64_t tolerance(const sim::SimConfig& c) {
    return c.maxSkewNs + (c.lossRate > 0 ? 100'000 : 0);
}

using RecordKey = std::tuple<std::int64_t, std::int64_t, std::string, std::string, int, int, int, std::uint64_t,
                             std::uint64_t>;

std::vector<RecordKey> recordKeys(const FlowTable& f) {
    const auto ips = endpointTexts(f);
    std::vector<RecordKey> keys;
    keys.reserve(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
        keys.emplace_back(f.startNs[i], f.endNs[i], ips[f.src[i]], ips[f.dst[i]], f.srcPort[i], f.dstPort[i],
                          f.proto[i], f.bytes[i], f.packets[i]);
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

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
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

// RoCE records from NIC address a to b (start, end, bytes).
using Record = std::tuple<std::int64_t, std::int64_t, std::uint64_t>;

std::vector<Record> records(const sim::SimResult& r, const std::string& a, const std::string& b) {
    std::vector<Record> out;
    const auto ips = endpointTexts(r.flows);
    for (std::size_t i = 0; i < r.flows.size(); ++i)
        if (r.flows.isRoce(i) && ips[r.flows.src[i]] == a && ips[r.flows.dst[i]] == b)
            out.emplace_back(r.flows.startNs[i], r.flows.endNs[i], r.flows.bytes[i]);
    return out;
}

// Lossless and skew-free, so that records are exactly the transfers.
sim::SimConfig exact(const std::string& name, std::uint64_t seed) {
    auto c = preset(name, seed);
    c.lossRate = 0.0;
    c.maxSkewNs = 0;
    return c;
}

const Finding* anomaly(const JobInfo& j, const std::string& kind) {
    for (const Finding& f : j.anomalies)
        if (f.kind == kind) return &f;
    return nullptr;
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
        QVERIFY(a.flows.endNs == b.flows.endNs);
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
            QVERIFY(r.flows.endNs[i] - r.flows.startNs[i] <= c.activeTimeoutNs);
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
                               f.endNs[i] - f.startNs[i]);
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
            const double gbps = double(r.flows.bytes[i]) * 8.0 / double(r.flows.endNs[i] - r.flows.startNs[i]);
            const bool inRange = r.flows.startNs[i] >= from && r.flows.endNs[i] <= to;
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
                        r.flows.startNs[i] >= s.startNs && r.flows.endNs[i] <= s.endNs)
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
        const std::int64_t last = *std::max_element(r.flows.endNs.begin(), r.flows.endNs.end());
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
