#include "analysis/recognition.h"

#include "model/diagnostics.h"

#include <algorithm>
#include <boost/pending/disjoint_sets.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace prism {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

struct Cluster {
    std::size_t records = 0;
    std::vector<float> series; // bytes per bin of the global grid, from bin `firstBin` on (candidates only)
    std::int64_t firstBin = 0;
    std::vector<EndpointId> endpoints;
    std::vector<long> hostKeys; // topology host index, or -1-endpoint for an unknown endpoint
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
};

double jaccard(const std::vector<long>& a, const std::vector<long>& b) {
    std::size_t inter = 0, i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] == b[j]) {
            ++inter;
            ++i;
            ++j;
        } else if (a[i] < b[j])
            ++i;
        else
            ++j;
    }
    std::size_t uni = a.size() + b.size() - inter;
    return uni ? double(inter) / double(uni) : 0.0;
}

// Pearson correlation of the bytes-per-bin series of two clusters over their common bins.
double rhythmCorrelation(const Cluster& a, const Cluster& b) {
    std::int64_t lo = std::max(a.firstBin, b.firstBin);
    std::int64_t hi = std::min(a.firstBin + std::int64_t(a.series.size()), b.firstBin + std::int64_t(b.series.size()));
    if (hi - lo < 2) return 0.0;
    const float* x = a.series.data() + (lo - a.firstBin);
    const float* y = b.series.data() + (lo - b.firstBin);
    const std::size_t n = std::size_t(hi - lo);
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
    mx /= double(n);
    my /= double(n);
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx <= 0 || syy <= 0) return 0.0;
    return sxy / std::sqrt(sxx * syy);
}

// (x - lo) / width for x >= lo, width > 0, without a 64-bit division per record: a floating-point estimate,
// corrected to the exact quotient.
class BinOf {
public:
    BinOf(std::int64_t lo, std::int64_t width) : m_lo(lo), m_width(width), m_inv(1.0 / double(width)) {}
    std::int64_t operator()(std::int64_t x) const {
        const std::int64_t d = x - m_lo;
        std::int64_t q = std::int64_t(double(d) * m_inv);
        while (q > 0 && q * m_width > d) --q;
        while ((q + 1) * m_width <= d) ++q;
        return q;
    }

private:
    std::int64_t m_lo, m_width;
    double m_inv;
};

// A RoCEv2 connection: one QP, seen as (src, dst, UDP source port) — the port is fixed for the QP's life.
struct ConnKey {
    EndpointId src, dst;
    std::uint16_t port;
    bool operator==(const ConnKey&) const = default;
};
struct ConnKeyHash {
    std::size_t operator()(const ConnKey& k) const {
        std::uint64_t h = (std::uint64_t(k.src) << 32 | k.dst) * 0x9E3779B97F4A7C15ull;
        return std::size_t(h ^ (h >> 29) ^ (std::uint64_t(k.port) * 0xC2B2AE3D27D4EB4Full));
    }
};

// Per endpoint, the times where a new epoch begins (recognition.h): connections sorted by their first
// record; a connection that opens while fewer than half of its endpoint's current-epoch connections are
// still alive (have a record ending at or after its first) opens a new epoch. The first epoch has no entry.
std::vector<std::vector<std::int64_t>> connectionEpochs(const FlowTable& flows) {
    struct Span {
        std::int64_t first, last;
    };
    std::unordered_map<ConnKey, std::uint32_t, ConnKeyHash> index;
    std::vector<ConnKey> keys;
    std::vector<Span> spans;
    for (std::size_t i = 0; i < flows.size(); ++i) {
        if (!flows.isRoce(i)) continue;
        const ConnKey key{flows.src[i], flows.dst[i], flows.srcPort[i]};
        auto [it, inserted] = index.try_emplace(key, std::uint32_t(spans.size()));
        if (inserted) {
            keys.push_back(key);
            spans.push_back({flows.startNs[i], flows.endNs[i]});
        } else {
            Span& sp = spans[it->second];
            sp.first = std::min(sp.first, flows.startNs[i]);
            sp.last = std::max(sp.last, flows.endNs[i]);
        }
    }
    std::vector<std::vector<std::uint32_t>> connsOf(flows.endpoints.size());
    for (std::uint32_t c = 0; c < keys.size(); ++c) {
        connsOf[keys[c].src].push_back(c);
        if (keys[c].dst != keys[c].src) connsOf[keys[c].dst].push_back(c);
    }
    std::vector<std::vector<std::int64_t>> starts(flows.endpoints.size());
    std::vector<std::int64_t> alive; // min-heap of the current epoch's connection ends
    for (std::size_t e = 0; e < connsOf.size(); ++e) {
        std::vector<std::uint32_t>& list = connsOf[e];
        std::sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
            return std::tie(spans[a].first, spans[a].last) < std::tie(spans[b].first, spans[b].last);
        });
        alive.clear();
        std::size_t epochSize = 0;
        for (std::uint32_t c : list) {
            const Span& sp = spans[c];
            while (!alive.empty() && alive.front() < sp.first) {
                std::pop_heap(alive.begin(), alive.end(), std::greater<>());
                alive.pop_back();
            }
            if (epochSize > 0 && 2 * alive.size() < epochSize) {
                starts[e].push_back(sp.first);
                alive.clear();
                epochSize = 0;
            }
            alive.push_back(sp.last);
            std::push_heap(alive.begin(), alive.end(), std::greater<>());
            ++epochSize;
        }
    }
    return starts;
}

} // namespace

std::int64_t rhythmBinWidth(std::int64_t lo, std::int64_t hi, const RecognitionParams& params) {
    return std::max<std::int64_t>(params.minRhythmBinNs,
                                  (hi - lo) / std::int64_t(std::max<std::size_t>(params.rhythmBins, 1)) + 1);
}

RecognitionResult recognizeJobs(const FlowTable& flows, const Topology& topology, const RecognitionParams& params,
                                const std::function<bool(double)>& progress) {
    RecognitionResult result;
    const std::size_t n = flows.size();
    const std::size_t endpoints = flows.endpoints.size();

    // Pass 1: the connections' lifetimes give each endpoint's epochs (recognition.h).
    const std::vector<std::vector<std::int64_t>> epochStarts = connectionEpochs(flows);
    if (progress && !progress(0.2)) throw Cancelled();

    // Pass 2: each endpoint's activity falls into its epochs (an (endpoint, epoch) is a node); join the two
    // nodes of each RoCE record (union-find; a node's last partner is remembered, so the repeats of a pair
    // cost no union), and gather per node what the clusters need (records, span, bytes as a sender). Per
    // record only its sender node is kept.
    std::vector<std::uint32_t> current(endpoints, kNone);
    std::vector<std::uint32_t> nextEpoch(endpoints, 0); // index into epochStarts[e] of the next boundary
    std::vector<EndpointId> nodeEndpoint;
    std::vector<std::uint32_t> nodeEpoch; // the epoch's index in epochStarts[e] order (0: the first)
    struct NodeStats {
        std::size_t records = 0;
        std::uint64_t bytes = 0;
        std::int64_t first = std::numeric_limits<std::int64_t>::max();
        std::int64_t last = std::numeric_limits<std::int64_t>::min();
        std::uint32_t lastPartner = kNone;
    };
    std::vector<NodeStats> nodeStats;
    std::vector<std::size_t> parent; // union-find over nodes (union by index, path halving)
    auto find = [&](std::size_t v) {
        while (parent[v] != v) {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        return v;
    };
    // Records come in start order, so an endpoint's epochs are entered one after another.
    auto nodeOf = [&](EndpointId e, std::int64_t start) __attribute__((always_inline)) {
        std::uint32_t& cur = current[e];
        const std::vector<std::int64_t>& starts = epochStarts[e];
        std::uint32_t& next = nextEpoch[e];
        bool open = cur == kNone;
        while (next < starts.size() && start >= starts[next]) [[unlikely]] {
            ++next;
            open = true;
        }
        if (open) [[unlikely]] {
            cur = std::uint32_t(nodeEndpoint.size());
            nodeEndpoint.push_back(e);
            nodeEpoch.push_back(next);
            nodeStats.emplace_back();
            parent.push_back(cur);
        }
        return cur;
    };
    std::vector<std::uint32_t> senderNode(n); // kNone for records that are not RoCE
    const std::int64_t* startNs = flows.startNs.data();
    const std::int64_t* endNs = flows.endNs.data();
    const EndpointId* src = flows.src.data();
    const EndpointId* dst = flows.dst.data();
    for (std::size_t i = 0; i < n; ++i) {
        if (!flows.isRoce(i)) {
            senderNode[i] = kNone;
            continue;
        }
        const std::int64_t start = startNs[i], end = endNs[i];
        const std::uint32_t s = nodeOf(src[i], start);
        const std::uint32_t d = nodeOf(dst[i], start);
        senderNode[i] = s;
        NodeStats& st = nodeStats[s];
        ++st.records;
        st.bytes += flows.bytes[i];
        st.first = std::min(st.first, start);
        st.last = std::max(st.last, end);
        if (st.lastPartner != d) {
            st.lastPartner = d;
            const std::size_t a = find(s), b = find(d);
            if (a != b) parent[std::max(a, b)] = std::min(a, b);
        }
        if (progress && (i & 0xFFFFF) == 0 && !progress(0.2 + 0.2 * double(i) / double(n))) throw Cancelled();
    }

    // Clusters: the connected node sets, numbered by their first node.
    const std::size_t nodes = nodeEndpoint.size();
    std::vector<std::uint32_t> clusterOfRoot(nodes, kNone);
    std::vector<Cluster> clusters;
    std::vector<std::uint32_t> clusterOfNode(nodes);
    for (std::size_t v = 0; v < nodes; ++v) {
        std::size_t root = find(v);
        if (clusterOfRoot[root] == kNone) {
            clusterOfRoot[root] = std::uint32_t(clusters.size());
            clusters.emplace_back();
        }
        clusterOfNode[v] = clusterOfRoot[root];
        Cluster& c = clusters[clusterOfNode[v]];
        EndpointId e = nodeEndpoint[v];
        c.endpoints.push_back(e);
        auto nic = topology.nicByIp(flows.endpoints.at(e));
        c.hostKeys.push_back(nic && topology.nics[*nic].host >= 0 ? long(topology.nics[*nic].host) : -1L - long(e));
        const NodeStats& st = nodeStats[v];
        c.records += st.records;
        c.first = std::min(c.first, st.first);
        c.last = std::max(c.last, st.last);
    }
    if (progress && !progress(0.5)) throw Cancelled();
    for (Cluster& c : clusters) {
        std::sort(c.endpoints.begin(), c.endpoints.end());
        c.endpoints.erase(std::unique(c.endpoints.begin(), c.endpoints.end()), c.endpoints.end());
        std::sort(c.hostKeys.begin(), c.hostKeys.end());
        c.hostKeys.erase(std::unique(c.hostKeys.begin(), c.hostKeys.end()), c.hostKeys.end());
    }

    // Topology-aware merging: overlapping host sets and one shared step rhythm.
    const std::size_t cn = clusters.size();
    std::vector<std::size_t> rank2(cn), parent2(cn);
    boost::disjoint_sets<std::size_t*, std::size_t*> jobs(rank2.data(), parent2.data());
    for (std::size_t c = 0; c < cn; ++c) jobs.make_set(c);
    std::vector<std::pair<std::size_t, std::size_t>> candidates;
    for (std::size_t a = 0; a < cn; ++a)
        for (std::size_t b = a + 1; b < cn; ++b) {
            const Cluster &A = clusters[a], &B = clusters[b];
            std::int64_t overlap = std::min(A.last, B.last) - std::max(A.first, B.first);
            std::int64_t shorter = std::min(A.last - A.first, B.last - B.first);
            if (overlap <= 0 || double(overlap) < 0.5 * double(shorter)) continue;
            if (jaccard(A.hostKeys, B.hostKeys) < params.jaccardThreshold) continue;
            candidates.emplace_back(a, b);
        }
    if (!candidates.empty()) {
        // Traffic series on one global grid, only for clusters that may merge: one pass over the records.
        std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
        for (const Cluster& c : clusters) lo = std::min(lo, c.first), hi = std::max(hi, c.last);
        const std::int64_t width = rhythmBinWidth(lo, hi, params);
        for (auto [a, b] : candidates)
            for (std::size_t c : {a, b}) {
                Cluster& C = clusters[c];
                if (!C.series.empty()) continue;
                C.firstBin = (C.first - lo) / width;
                C.series.assign(std::size_t((C.last - lo) / width - C.firstBin + 1), 0.0f);
            }
        // Per node, where its records go (nullptr: not a candidate), so the pass makes no cluster lookups.
        std::vector<float*> seriesOfNode(nodes, nullptr);
        std::vector<std::int64_t> firstBinOfNode(nodes, 0);
        for (std::size_t v = 0; v < nodes; ++v) {
            Cluster& C = clusters[clusterOfNode[v]];
            if (C.series.empty()) continue;
            seriesOfNode[v] = C.series.data();
            firstBinOfNode[v] = C.firstBin;
        }
        const BinOf binOf(lo, width);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t v = senderNode[i];
            if (v == kNone || !seriesOfNode[v]) continue;
            seriesOfNode[v][std::size_t(binOf(startNs[i]) - firstBinOfNode[v])] += float(flows.bytes[i]);
        }
        for (auto [a, b] : candidates)
            if (rhythmCorrelation(clusters[a], clusters[b]) >= params.rhythmThreshold) jobs.union_set(a, b);
    }
    if (progress && !progress(0.7)) throw Cancelled();

    std::map<std::size_t, std::vector<std::size_t>> members;
    for (std::size_t c = 0; c < cn; ++c) members[jobs.find_set(c)].push_back(c);
    std::size_t unknownTotal = 0;
    for (auto& [root, list] : members) {
        RecognizedJob job;
        job.clusters = int(list.size());
        job.startNs = std::numeric_limits<std::int64_t>::max();
        job.endNs = std::numeric_limits<std::int64_t>::min();
        for (std::size_t c : list) {
            const Cluster& C = clusters[c];
            job.nics.insert(job.nics.end(), C.endpoints.begin(), C.endpoints.end());
            job.startNs = std::min(job.startNs, C.first);
            job.endNs = std::max(job.endNs, C.last);
        }
        std::sort(job.nics.begin(), job.nics.end());
        job.nics.erase(std::unique(job.nics.begin(), job.nics.end()), job.nics.end());
        // Order NICs by (host, first GPU); unknown endpoints last, by address.
        struct Key {
            int host;
            int gpu;
            IpAddr ip;
        };
        std::vector<std::pair<Key, EndpointId>> keyed;
        for (EndpointId e : job.nics) {
            const IpAddr& ip = flows.endpoints.at(e);
            auto nic = topology.nicByIp(ip);
            if (nic && topology.nics[*nic].host >= 0) {
                const Nic& N = topology.nics[*nic];
                keyed.push_back({{N.host, N.gpus.empty() ? 0 : N.gpus.front(), ip}, e});
                job.hosts.push_back(N.host);
            } else {
                keyed.push_back({{std::numeric_limits<int>::max(), 0, ip}, e});
            }
        }
        std::sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) {
            return std::tie(x.first.host, x.first.gpu, x.first.ip) < std::tie(y.first.host, y.first.gpu, y.first.ip);
        });
        for (std::size_t i = 0; i < keyed.size(); ++i) {
            job.nics[i] = keyed[i].second;
            if (keyed[i].first.host == std::numeric_limits<int>::max()) job.unknownNics.push_back(keyed[i].second);
        }
        std::sort(job.hosts.begin(), job.hosts.end());
        job.hosts.erase(std::unique(job.hosts.begin(), job.hosts.end()), job.hosts.end());
        unknownTotal += job.unknownNics.size();
        result.jobs.push_back(std::move(job));
    }
    // The records of each job, in start order: one pass over the sender nodes, into lists sized beforehand.
    {
        std::map<std::size_t, std::size_t> jobOfRoot;
        for (auto& [root, list] : members) jobOfRoot.emplace(root, jobOfRoot.size());
        std::vector<std::uint32_t> jobOfNode(nodes);
        std::vector<std::size_t> count(result.jobs.size(), 0);
        for (std::size_t v = 0; v < nodes; ++v) {
            const std::uint32_t j = std::uint32_t(jobOfRoot.at(jobs.find_set(clusterOfNode[v])));
            jobOfNode[v] = j;
            const std::vector<std::int64_t>& starts = epochStarts[nodeEndpoint[v]];
            const std::uint32_t k = nodeEpoch[v];
            result.jobs[j].nodes.push_back({nodeEndpoint[v], k ? starts[k - 1] : std::numeric_limits<std::int64_t>::min(),
                                            k < starts.size() ? starts[k] : std::numeric_limits<std::int64_t>::max()});
            count[j] += nodeStats[v].records;
            result.jobs[j].bytes += nodeStats[v].bytes;
        }
        std::vector<std::uint32_t*> fill(result.jobs.size());
        for (std::size_t j = 0; j < result.jobs.size(); ++j) {
            result.jobs[j].records.resize(count[j]);
            fill[j] = result.jobs[j].records.data();
        }
        if (result.jobs.size() == 1) {
            std::uint32_t* out = fill[0];
            for (std::size_t i = 0; i < n; ++i)
                if (senderNode[i] != kNone) *out++ = std::uint32_t(i);
        } else {
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint32_t v = senderNode[i];
                if (v != kNone) *fill[jobOfNode[v]]++ = std::uint32_t(i);
            }
        }
    }
    std::sort(result.jobs.begin(), result.jobs.end(), [&](const RecognizedJob& a, const RecognizedJob& b) {
        if (a.startNs != b.startNs) return a.startNs < b.startNs;
        return flows.endpoints.at(a.nics.front()) < flows.endpoints.at(b.nics.front());
    });
    // Restarts: a job on (mostly) the same NICs as one that ended before it started — new connections on the
    // same GPUs. The latest such job is the one restarted.
    {
        std::vector<std::vector<long>> nicSets;
        for (const RecognizedJob& job : result.jobs) {
            std::vector<long> ids(job.nics.begin(), job.nics.end());
            std::sort(ids.begin(), ids.end());
            nicSets.push_back(std::move(ids));
        }
        for (std::size_t j = 0; j < result.jobs.size(); ++j)
            for (std::size_t i = 0; i < result.jobs.size(); ++i) {
                const RecognizedJob &J = result.jobs[j], &I = result.jobs[i];
                if (i == j || I.endNs > J.startNs || jaccard(nicSets[i], nicSets[j]) < params.jaccardThreshold)
                    continue;
                if (J.restartOf < 0 || result.jobs[std::size_t(J.restartOf)].endNs < I.endNs)
                    result.jobs[j].restartOf = int(i);
            }
    }
    if (unknownTotal)
        result.notes.push_back(std::to_string(unknownTotal) +
                               " RoCE endpoints are not NICs of topology.json; each is treated as its own host");
    if (progress && !progress(1.0)) throw Cancelled();
    return result;
}

} // namespace prism
