#pragma once
// Helpers the simulator's tests share (tst_simulator.cpp, tst_sim_workloads.cpp): presets by name, where each
// NIC sits in a truth job, each job's flows by kind, and checkTruth, every truth invariant the engine relies on.
#include "sim/placement.h"
#include "sim/simulator.h"

#include <QtTest>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace prism::test {

inline sim::SimConfig preset(const std::string& name, std::uint64_t seed = 1) {
    auto c = sim::makePreset(name, seed);
    if (!c) throw std::runtime_error("unknown preset " + name);
    return *c;
}

inline double median(std::vector<double> v) {
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

inline std::vector<std::string> endpointTexts(const FlowTable& f) {
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
inline bool ringPp(const sim::JobSpec& j) { return j.tiedEmbedding || j.virtualStages > 1; }

inline std::vector<JobFlows> flowsByJob(const sim::SimResult& r, std::int64_t tol, const sim::SimConfig* c = nullptr) {
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
            if (!views[j].has(s) || !views[j].has(d) || !views[j].covers(r.flows.startNs[i], r.flows.end(i), tol))
                continue;
            Span span{r.flows.startNs[i], r.flows.end(i)};
            out[j].all.push_back(span);
            out[j].ports[{r.flows.src[i], r.flows.dst[i]}].insert(r.flows.srcPort[i]);
            if (views[j].isDp(s, d)) out[j].dp.push_back(span);
            if (views[j].isPp(s, d)) out[j].pp.push_back(span);
        }
    }
    return out;
}

// Whether every DP group of the job stays inside one host (synced over NVLink only): the truth then gives the shape
// the network sees, its DP counted in TP (docs/SIMULATOR.md "Truth").
inline bool dpInsideHosts(const sim::SimConfig& c, const sim::JobSpec& j) {
    if (j.dp < 2) return false;
    for (int p = 0; p < j.pp; ++p)
        for (int t = 0; t < j.tp; ++t)
            for (int d = 1; d < j.dp; ++d)
                if (sim::nicOfRank(c, j, t + j.tp * (d + j.dp * p)) / sim::nicsPerHost(c) !=
                    sim::nicOfRank(c, j, t + j.tp * j.dp * p) / sim::nicsPerHost(c))
                    return false;
    return true;
}

// Every truth invariant the engine relies on; `tol` absorbs clock skew and the odd lost record.
inline void checkTruth(const sim::SimConfig& c, const sim::SimResult& r, std::int64_t tol) {
    const Topology& topo = r.topology;
    QVERIFY2(!r.flows.empty(), "the capture has records");
    QCOMPARE(r.truth.jobs.size(), c.jobs.size());
    QVERIFY(r.flows.isSortedByStart());

    for (std::size_t ji = 0; ji < r.truth.jobs.size(); ++ji) {
        const JobInfo& j = r.truth.jobs[ji];
        const sim::JobSpec& spec = c.jobs[ji];
        QCOMPARE(j.id, spec.name);
        if (dpInsideHosts(c, spec)) { // the shape the network sees: DP inside a host counts as TP
            QCOMPARE(j.tp, spec.tp * spec.dp);
            QCOMPARE(j.dp, 1);
            QCOMPARE(j.pp, spec.pp);
            continue;
        }
        const int share = c.gpusPerNic / spec.tp; // DP ranks behind one NIC count as TP (as the network sees them)
        QCOMPARE(j.tp, share > 1 && spec.dp % share == 0 ? spec.tp * share : spec.tp);
        QCOMPARE(j.pp, spec.pp);
        QCOMPARE(j.dp, share > 1 && spec.dp % share == 0 ? spec.dp / share : spec.dp);
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
            inOneJob = inOneJob || (v.has(a) && v.has(b) && v.covers(r.flows.startNs[i], r.flows.end(i), tol) &&
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

inline std::int64_t tolerance(const sim::SimConfig& c) {
    return c.maxSkewNs + (c.lossRate > 0 ? 100'000 : 0);
}

inline std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline const Finding* anomaly(const JobInfo& j, const std::string& kind) {
    for (const Finding& f : j.anomalies)
        if (f.kind == kind) return &f;
    return nullptr;
}

} // namespace prism::test
