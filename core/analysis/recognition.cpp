#include "analysis/recognition.h"

#include "analysis/stats.h"
#include "model/diagnostics.h"
#include "util/parallel.h"
#include "util/varint.h"

#include <algorithm>
#include <boost/pending/disjoint_sets.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace prism {

void RecognizedJob::packRecords() {
    if (records.empty()) return;
    std::string out;
    appendIndexDeltas(records, out);
    packedCount = records.size();
    packedRecords = std::move(out);
    decltype(records)().swap(records);
}

void RecognizedJob::unpackRecords() {
    if (packedRecords.empty()) return;
    decltype(records) list;
    list.reserve(packedCount);
    forEachRecord([&](std::uint32_t r) { list.push_back(r); });
    records = std::move(list);
    std::string().swap(packedRecords);
    packedCount = 0;
}

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

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
    const std::size_t n = x.size();
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

// Whether two trains of step starts (bins, ascending) keep one lag: the members between a DP ring's ends start
// their step once the ring's all-gather and a forward are done, the rails at the all-gather, a constant lag
// longer than the starts' widening (TP 2 x PP 6 x DP 8: 36 step starts each side, correlated -0.04 at lag 0).
// The rails may start more bursts a step after as long a quiet (PP 4 x DP 48, 42 s steps: 71 starts against
// the members' 22), up to four a step. The lag is the most common difference, within a quarter of the fewer
// train's usual spacing, from one of its starts to one of the other's; half of its starts (5 at least) must meet
// one of the other's there, give or take `widen`, and 8x as many as chance would: either train may miss step
// starts and have others (TP 2 x PP 5 x DP 12: 12 of 18 met, chance 0.1). Unrelated jobs drift apart: their
// steps' jitter walks the phase between them.
bool startsAtOneLag(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b, std::int64_t widen) {
    const std::vector<std::int64_t>& few = a.size() <= b.size() ? a : b;
    const std::vector<std::int64_t>& many = &few == &a ? b : a;
    if (few.size() < 5 || many.size() > 4 * few.size()) return false;
    std::vector<double> spacing;
    for (std::size_t i = 1; i < few.size(); ++i) spacing.push_back(double(few[i] - few[i - 1]));
    const std::int64_t reach = std::int64_t(medianOf(spacing) / 4);
    std::vector<std::int64_t> lags;
    for (std::size_t i = 0, j0 = 0; i < few.size(); ++i) {
        while (j0 < many.size() && many[j0] < few[i] - reach) ++j0;
        for (std::size_t j = j0; j < many.size() && many[j] <= few[i] + reach; ++j) lags.push_back(many[j] - few[i]);
    }
    if (lags.empty()) return false;
    std::sort(lags.begin(), lags.end());
    std::size_t best = 0, at = 0;
    for (std::size_t i = 0, j = 0; i < lags.size(); ++i) {
        while (lags[i] - lags[j] > 2 * widen) ++j;
        if (i - j + 1 > best) best = i - j + 1, at = j;
    }
    const std::int64_t lag = lags[at] + widen; // the middle of the densest window
    std::size_t met = 0;
    for (std::size_t i = 0, j = 0; i < few.size(); ++i) {
        while (j < many.size() && many[j] < few[i] + lag - widen) ++j;
        if (j < many.size() && many[j] <= few[i] + lag + widen) ++met;
    }
    // By chance a start meets one of `many` at a given lag with odds many x (2 widen + 1) / span.
    const double span = double(std::max(few.back(), many.back()) - std::min(few.front(), many.front()) + 1);
    const double chance = double(few.size()) * double(many.size()) * double(2 * widen + 1) / span;
    return met >= 5 && 2 * met >= few.size() && double(met) >= 8.0 * chance;
}

// Pearson correlation of the bytes-per-bin series of two clusters over their common bins, on the grid and on
// grids 2, 4 … 1024 times as coarse (bins summed, aligned to the global grid) while they keep at least 64 common
// bins: the largest. (Up to 1024: pipeline replicas whose DP peers share hosts have no traffic between them, and
// their transfers, each micro-batch jittered on its own, agree only on the step's envelope — eight chains of
// PP 4 with 8 s steps correlated 0.33 at 64 times, 0.57 at 128, and were eight jobs.) One cluster of a job can move its bursts at another pace than the rest: a rail whose NIC
// link runs at a third of its bandwidth stretches its ring's all-reduce to three times as long, in step with
// the others (every step waits for it), which correlates about 0.49 with them bin by bin and near 1 on a grid
// as coarse as the stretched burst; and the bursts' onsets (below) stay together at any pace. Unrelated jobs
// keep independent phases on every grid. Whether the largest reaches `threshold`: the comparisons stop at the
// first that does (the same answer; a job's own clusters mostly agree on the first grid).
// `turns`: the clusters may also take turns (one's hosts lie among the other's: hostsWithin). The members a DP
// ring passes between its entry and exit over NVLink have only their activations on the network, sent while
// the ring's rails are quiet, and the rails sync while they are: on a grid as coarse as a step's phases (8
// bins or more) the two series are each other's negative (-0.9 where unrelated jobs stay near 0).
bool rhythmsAgree(const Cluster& a, const Cluster& b, double threshold, bool turns) {
    constexpr double kTurns = 0.7;
    if (threshold <= 0.0) return true; // the correlation is taken as at least 0
    const std::int64_t lo = std::max(a.firstBin, b.firstBin);
    const std::int64_t hi =
        std::min(a.firstBin + std::int64_t(a.series.size()), b.firstBin + std::int64_t(b.series.size()));
    if (hi - lo < 2) return false;
    std::vector<double> x, y;
    x.reserve(std::size_t(hi - lo));
    y.reserve(std::size_t(hi - lo));
    for (std::int64_t k = 1; k <= 1024; k *= 2) {
        // Coarse bins [c*k, (c+1)*k) of the global grid wholly inside [lo, hi).
        const std::int64_t c0 = (lo + k - 1) / k, c1 = hi / k;
        if (k > 1 && c1 - c0 < 64) break;
        x.assign(std::size_t(c1 - c0), 0.0);
        y.assign(std::size_t(c1 - c0), 0.0);
        for (std::int64_t bin = c0 * k; bin < c1 * k; ++bin) {
            const std::size_t i = std::size_t(bin / k - c0);
            x[i] += a.series[std::size_t(bin - a.firstBin)];
            y[i] += b.series[std::size_t(bin - b.firstBin)];
        }
        const double r = pearson(x, y);
        if (r >= threshold || (turns && k >= 8 && r <= -kTurns)) return true;
    }
    // Burst onsets — a bin with traffic after at least `quiet` bins without, for quiet = 2, 4 … 32 bins — each
    // widened to the bins beside it: the rails of one job start their sync together every step however long each
    // then takes (a rail at a fifth of its bandwidth, whose bursts fill most of the step, still starts with the
    // others), while inside a burst the hops of a ring leave gaps of a bin or so. Only with at least 8 onsets on
    // each side (continuous traffic has few, and few say little). Then step starts — onsets after 64 … 1024
    // quiet bins, each widened by an eighth of that: pipeline replicas whose DP ring passes through their hosts
    // over NVLink have only their activations on the network, at another pace than the ring's rails, but all
    // start each step together once the optimizer is done. Five on each side suffice there: a step start is
    // rare (a few in 10^5 bins), and chance meets it seldom.
    std::vector<std::int64_t> atA, atB; // the last onsets' bins (from lo)
    const auto onsets = [&](const Cluster& c, std::int64_t quiet, std::int64_t widen, std::vector<double>& out,
                            std::vector<std::int64_t>& at) {
        out.assign(std::size_t(hi - lo), 0.0);
        at.clear();
        std::size_t n = 0;
        std::int64_t empty = 0; // bins without traffic just before `bin`
        for (std::int64_t bin = lo; bin < hi; ++bin) {
            if (c.series[std::size_t(bin - c.firstBin)] == 0) {
                ++empty;
                continue;
            }
            if (empty >= quiet && bin > lo) {
                ++n;
                const std::int64_t i = bin - lo;
                at.push_back(i);
                for (std::int64_t k = std::max<std::int64_t>(0, i - widen); k <= std::min(i + widen, hi - lo - 1); ++k)
                    out[std::size_t(k)] = 1.0;
            }
            empty = 0;
        }
        return n;
    };
    for (std::int64_t quiet = 2; quiet <= 1024; quiet *= 2) {
        const bool stepStarts = quiet >= 64;
        const std::size_t least = stepStarts ? 5 : 8;
        const std::int64_t widen = stepStarts ? quiet / 8 : 1;
        const std::size_t onsetsA = onsets(a, quiet, widen, x, atA), onsetsB = onsets(b, quiet, widen, y, atB);
        if (onsetsA < least || onsetsB < least) {
            if (stepStarts) break; // longer quiet has fewer
            continue;
        }
        if (pearson(x, y) >= threshold) return true;
        if (stepStarts && turns && startsAtOneLag(atA, atB, widen)) return true;
    }
    return false;
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

// Whether all hosts of the cluster with fewer lie among the other's. A DP ring through a host over NVLink leaves
// the GPUs between where it enters and where it leaves with only their pipeline traffic on the network: their
// clusters span a few of the job's hosts (2 of 18), far below any Jaccard threshold.
bool hostsWithin(const Cluster& a, const Cluster& b) {
    const Cluster& small = a.hostKeys.size() <= b.hostKeys.size() ? a : b;
    const Cluster& large = &small == &a ? b : a;
    return !small.hostKeys.empty() && std::includes(large.hostKeys.begin(), large.hostKeys.end(),
                                                    small.hostKeys.begin(), small.hostKeys.end());
}

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
std::vector<std::vector<std::int64_t>> connectionEpochs(const std::vector<ConnKey>& keys,
                                                        const std::vector<std::pair<std::int64_t, std::int64_t>>& spans,
                                                        std::size_t endpoints) {
    std::vector<std::vector<std::uint32_t>> connsOf(endpoints);
    for (std::uint32_t c = 0; c < keys.size(); ++c) {
        connsOf[keys[c].src].push_back(c);
        if (keys[c].dst != keys[c].src) connsOf[keys[c].dst].push_back(c);
    }
    std::vector<std::vector<std::int64_t>> starts(endpoints);
    std::vector<std::int64_t> alive; // min-heap of the current epoch's connection ends
    for (std::size_t e = 0; e < connsOf.size(); ++e) {
        std::vector<std::uint32_t>& list = connsOf[e];
        std::sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) { return spans[a] < spans[b]; });
        alive.clear();
        std::size_t epochSize = 0;
        for (std::uint32_t c : list) {
            const auto [first, last] = spans[c];
            while (!alive.empty() && alive.front() < first) {
                std::pop_heap(alive.begin(), alive.end(), std::greater<>());
                alive.pop_back();
            }
            if (epochSize > 0 && 2 * alive.size() < epochSize) {
                starts[e].push_back(first);
                alive.clear();
                epochSize = 0;
            }
            alive.push_back(last);
            std::push_heap(alive.begin(), alive.end(), std::greater<>());
            ++epochSize;
        }
    }
    return starts;
}

// RecognitionPasses::State::ringEnd from the connections.
std::vector<std::uint8_t> ringEnds(const std::vector<ConnKey>& keys, std::size_t endpoints) {
    std::set<std::pair<EndpointId, EndpointId>> sent;
    for (const ConnKey& k : keys) sent.insert({k.src, k.dst});
    std::vector<std::uint8_t> in(endpoints, 0), out(endpoints, 0), end(endpoints, 0);
    for (const auto& [a, b] : sent)
        if (a != b && !sent.count({b, a})) out[a] = in[b] = 1;
    for (std::size_t e = 0; e < endpoints; ++e) end[e] = in[e] && !out[e] ? 1 : out[e] && !in[e] ? 2 : 0;
    return end;
}

} // namespace

std::int64_t rhythmBinWidth(std::int64_t lo, std::int64_t hi, const RecognitionParams& params) {
    return std::max<std::int64_t>(params.minRhythmBinNs,
                                  (hi - lo) / std::int64_t(std::max<std::size_t>(params.rhythmBins, 1)) + 1);
}

struct RecognitionPasses::State {
    const Topology& topology;
    RecognitionParams params;
    // Pass 1: connections, each with its first start and last end, in the order first seen.
    // A connection's index is found in a table of its own (open addressing, linear probing, at most half full): a
    // job has a few connections a GPU, looked up once a record (on `large` 6,144 for 6.3M records; a node-based
    // hash map took 15 ns a record, most of the pass).
    struct Connections {
        std::vector<std::uint32_t> slots; // index + 1 into keys, 0 empty; a power of two in size
        std::vector<ConnKey> keys;
        std::vector<std::pair<std::int64_t, std::int64_t>> spans;
        std::size_t endpoints = 0; // 1 + the largest id seen
        // (Inline, as record below: a call a record took 4% of recognition on `large`.)
        [[gnu::always_inline]] void add(const ConnKey& key, std::int64_t start, std::int64_t end) {
            if (2 * (keys.size() + 1) > slots.size()) grow();
            const std::size_t mask = slots.size() - 1;
            for (std::size_t h = ConnKeyHash{}(key)&mask;; h = (h + 1) & mask) {
                const std::uint32_t at = slots[h];
                if (at == 0) {
                    slots[h] = std::uint32_t(keys.size() + 1);
                    keys.push_back(key);
                    spans.emplace_back(start, end);
                    endpoints = std::max<std::size_t>(endpoints, std::size_t(std::max(key.src, key.dst)) + 1);
                    return;
                }
                if (keys[at - 1] == key) {
                    auto& sp = spans[at - 1];
                    sp.first = std::min(sp.first, start);
                    sp.second = std::max(sp.second, end);
                    return;
                }
            }
        }
        void grow() {
            slots.assign(std::max<std::size_t>(64, 2 * slots.size()), 0);
            const std::size_t mask = slots.size() - 1;
            for (std::size_t c = 0; c < keys.size(); ++c) {
                std::size_t h = ConnKeyHash{}(keys[c]) & mask;
                while (slots[h]) h = (h + 1) & mask;
                slots[h] = std::uint32_t(c + 1);
            }
        }
        // Adds a later part's connections as if their records had come after this one's.
        void append(const Connections& later) {
            for (std::size_t c = 0; c < later.keys.size(); ++c)
                add(later.keys[c], later.spans[c].first, later.spans[c].second);
        }
    };
    Connections conns;
    std::size_t endpoints = 0; // 1 + the largest id seen
    // Per endpoint, where a ring passes through its host over NVLink (DP ranks sharing a host): 1 where the ring
    // enters (it receives from a peer on another host that it never sends to, and sends one-way to none), 2 where it
    // leaves (the reverse), else 0.
    std::vector<std::uint8_t> ringEnd;
    // Pass 2: nodes (endpoint, epoch), dense: nodeBase[e] + epoch.
    std::vector<std::vector<std::int64_t>> epochStarts;
    std::vector<std::uint32_t> nodeBase;
    std::vector<EndpointId> nodeEndpoint;
    std::vector<std::uint32_t> nodeEpoch;
    struct NodeStats {
        std::uint64_t records = 0;
        std::uint64_t bytes = 0;
        std::int64_t first = std::numeric_limits<std::int64_t>::max();
        std::int64_t last = std::numeric_limits<std::int64_t>::min();
        std::uint32_t lastPartner = kNone;
        bool touched = false;
    };
    std::vector<NodeStats> nodeStats;
    std::vector<std::uint32_t> parent; // union-find over nodes (union by index, path halving)
    // After pass 2.
    std::vector<Cluster> clusters;
    std::vector<std::uint32_t> clusterOfNode;
    std::vector<std::pair<std::size_t, std::size_t>> candidates;
    std::vector<float*> seriesOfNode;
    std::vector<std::int64_t> firstBinOfNode;
    std::int64_t lo = 0, width = 1;
    BinOf binOf{0, 1};

    State(const Topology& t, const RecognitionParams& p) : topology(t), params(p) {}

    static std::uint32_t find(std::vector<std::uint32_t>& parent, std::uint32_t v) {
        while (parent[v] != v) {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        return v;
    }
    std::uint32_t find(std::uint32_t v) { return find(parent, v); }
    // Pass 2 for one record into `stats` and `parent` (the state's own, or a part's: recognizeJobs).
    [[gnu::always_inline]] std::uint32_t record(std::vector<NodeStats>& stats, std::vector<std::uint32_t>& parents,
                                                EndpointId src, EndpointId dst, std::int64_t start, std::int64_t end,
                                                std::uint64_t bytes) const {
        const std::uint32_t s = nodeOf(src, start), d = nodeOf(dst, start);
        NodeStats& st = stats[s];
        ++st.records;
        st.bytes += bytes;
        st.first = std::min(st.first, start);
        st.last = std::max(st.last, end);
        st.touched = true;
        stats[d].touched = true;
        if (st.lastPartner != d) {
            st.lastPartner = d;
            const std::uint32_t a = find(parents, s), b = find(parents, d);
            if (a != b) parents[std::max(a, b)] = std::min(a, b);
        }
        return s;
    }
    [[gnu::always_inline]] std::uint32_t nodeOf(EndpointId e, std::int64_t start) const {
        const std::vector<std::int64_t>& starts = epochStarts[e];
        if (starts.empty()) [[likely]] return nodeBase[e];
        return nodeBase[e] + std::uint32_t(std::upper_bound(starts.begin(), starts.end(), start) - starts.begin());
    }
};

RecognitionPasses::RecognitionPasses(const Topology& topology, const RecognitionParams& params)
    : m(std::make_unique<State>(topology, params)) {}

RecognitionPasses::~RecognitionPasses() = default;

void RecognitionPasses::connection(EndpointId src, EndpointId dst, std::uint16_t port, std::int64_t start,
                                   std::int64_t end) {
    m->conns.add(ConnKey{src, dst, port}, start, end);
}

void RecognitionPasses::endConnections() {
    State& S = *m;
    S.endpoints = S.conns.endpoints;
    S.epochStarts = connectionEpochs(S.conns.keys, S.conns.spans, S.endpoints);
    S.ringEnd = ringEnds(S.conns.keys, S.endpoints);
    S.conns = {};
    S.nodeBase.resize(S.endpoints + 1);
    std::uint32_t n = 0;
    for (std::size_t e = 0; e < S.endpoints; ++e) {
        S.nodeBase[e] = n;
        for (std::uint32_t k = 0; k <= S.epochStarts[e].size(); ++k) {
            S.nodeEndpoint.push_back(EndpointId(e));
            S.nodeEpoch.push_back(k);
        }
        n += std::uint32_t(S.epochStarts[e].size() + 1);
    }
    S.nodeBase[S.endpoints] = n;
    S.nodeStats.resize(n);
    S.parent.resize(n);
    for (std::uint32_t v = 0; v < n; ++v) S.parent[v] = v;
}

std::uint32_t RecognitionPasses::record(EndpointId src, EndpointId dst, std::int64_t start, std::int64_t end,
                                        std::uint64_t bytes) {
    return m->record(m->nodeStats, m->parent, src, dst, start, end, bytes);
}

bool RecognitionPasses::endGraph(const EndpointTable& endpoints) {
    State& S = *m;
    const std::size_t nodes = S.nodeStats.size();
    // Clusters: the connected node sets (of nodes that have records), numbered by their first node.
    std::vector<std::uint32_t> clusterOfRoot(nodes, kNone);
    S.clusterOfNode.assign(nodes, kNone);
    for (std::uint32_t v = 0; v < nodes; ++v) {
        if (!S.nodeStats[v].touched) continue;
        const std::uint32_t root = S.find(v);
        if (clusterOfRoot[root] == kNone) {
            clusterOfRoot[root] = std::uint32_t(S.clusters.size());
            S.clusters.emplace_back();
        }
        S.clusterOfNode[v] = clusterOfRoot[root];
        Cluster& c = S.clusters[S.clusterOfNode[v]];
        const EndpointId e = S.nodeEndpoint[v];
        c.endpoints.push_back(e);
        auto nic = S.topology.nicByIp(endpoints.at(e));
        c.hostKeys.push_back(nic && S.topology.nics[*nic].host >= 0 ? long(S.topology.nics[*nic].host) : -1L - long(e));
        const State::NodeStats& st = S.nodeStats[v];
        c.records += st.records;
        c.first = std::min(c.first, st.first);
        c.last = std::max(c.last, st.last);
    }
    for (Cluster& c : S.clusters) {
        std::sort(c.endpoints.begin(), c.endpoints.end());
        c.endpoints.erase(std::unique(c.endpoints.begin(), c.endpoints.end()), c.endpoints.end());
        std::sort(c.hostKeys.begin(), c.hostKeys.end());
        c.hostKeys.erase(std::unique(c.hostKeys.begin(), c.hostKeys.end()), c.hostKeys.end());
    }
    // Topology-aware merging candidates: overlapping in time and host sets.
    const std::size_t cn = S.clusters.size();
    for (std::size_t a = 0; a < cn; ++a)
        for (std::size_t b = a + 1; b < cn; ++b) {
            const Cluster &A = S.clusters[a], &B = S.clusters[b];
            std::int64_t overlap = std::min(A.last, B.last) - std::max(A.first, B.first);
            std::int64_t shorter = std::min(A.last - A.first, B.last - B.first);
            if (overlap <= 0 || double(overlap) < 0.5 * double(shorter)) continue;
            if (jaccard(A.hostKeys, B.hostKeys) < S.params.jaccardThreshold && !hostsWithin(A, B)) continue;
            S.candidates.emplace_back(a, b);
        }
    // A ring through a host over NVLink leaves the network at one NIC and comes back at another: the rail clusters
    // on either side share that host but few others (a DP group of 7 hosts, two replicas a host, was 7 jobs of 2
    // hosts' Jaccard). Where one cluster's NIC is where a ring enters a host and another's where a ring leaves it,
    // the two may merge whatever their host sets: their rhythms decide, as for any candidates.
    {
        std::map<long, std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> endsOfHost;
        for (std::size_t e = 0; e < S.ringEnd.size(); ++e) {
            if (!S.ringEnd[e] || S.clusterOfNode[S.nodeBase[e]] == kNone) continue;
            auto nic = S.topology.nicByIp(endpoints.at(EndpointId(e)));
            if (!nic || S.topology.nics[*nic].host < 0) continue;
            auto& ends = endsOfHost[long(S.topology.nics[*nic].host)];
            (S.ringEnd[e] == 1 ? ends.first : ends.second).push_back(S.clusterOfNode[S.nodeBase[e]]);
        }
        std::set<std::pair<std::size_t, std::size_t>> known(S.candidates.begin(), S.candidates.end());
        for (const auto& [host, ends] : endsOfHost)
            for (std::uint32_t a : ends.first)
                for (std::uint32_t b : ends.second) {
                    const std::pair<std::size_t, std::size_t> pair(std::min(a, b), std::max(a, b));
                    const Cluster &A = S.clusters[pair.first], &B = S.clusters[pair.second];
                    const std::int64_t overlap = std::min(A.last, B.last) - std::max(A.first, B.first);
                    const std::int64_t shorter = std::min(A.last - A.first, B.last - B.first);
                    if (a == b || overlap <= 0 || double(overlap) < 0.5 * double(shorter)) continue;
                    if (known.insert(pair).second) S.candidates.push_back(pair);
                }
    }
    if (S.candidates.empty()) return false;
    // Traffic series on one global grid, only for clusters that may merge.
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    for (const Cluster& c : S.clusters) lo = std::min(lo, c.first), hi = std::max(hi, c.last);
    S.lo = lo;
    S.width = rhythmBinWidth(lo, hi, S.params);
    S.binOf = BinOf(lo, S.width);
    for (auto [a, b] : S.candidates)
        for (std::size_t c : {a, b}) {
            Cluster& C = S.clusters[c];
            if (!C.series.empty()) continue;
            C.firstBin = (C.first - lo) / S.width;
            C.series.assign(std::size_t((C.last - lo) / S.width - C.firstBin + 1), 0.0f);
        }
    // Per node, where its records go (nullptr: not a candidate), so the pass makes no cluster lookups.
    S.seriesOfNode.assign(nodes, nullptr);
    S.firstBinOfNode.assign(nodes, 0);
    for (std::size_t v = 0; v < nodes; ++v) {
        if (S.clusterOfNode[v] == kNone) continue;
        Cluster& C = S.clusters[S.clusterOfNode[v]];
        if (C.series.empty()) continue;
        S.seriesOfNode[v] = C.series.data();
        S.firstBinOfNode[v] = C.firstBin;
    }
    return true;
}

void RecognitionPasses::series(std::uint32_t senderNode, std::int64_t start, std::uint64_t bytes) {
    State& S = *m;
    float* series = S.seriesOfNode[senderNode];
    if (!series) return;
    series[std::size_t(S.binOf(start) - S.firstBinOfNode[senderNode])] += float(bytes);
}

std::uint32_t RecognitionPasses::senderNode(EndpointId src, std::int64_t start) const { return m->nodeOf(src, start); }

RecognitionResult RecognitionPasses::result(const EndpointTable& endpoints, std::vector<std::uint32_t>* jobOfNode) {
    State& S = *m;
    const Topology& topology = S.topology;
    const RecognitionParams& params = S.params;
    RecognitionResult result;
    const std::size_t cn = S.clusters.size();
    const std::vector<Cluster>& clusters = S.clusters;
    std::vector<std::size_t> rank2(cn), parent2(cn);
    boost::disjoint_sets<std::size_t*, std::size_t*> jobs(rank2.data(), parent2.data());
    for (std::size_t c = 0; c < cn; ++c) jobs.make_set(c);
    for (auto [a, b] : S.candidates)
        if (jobs.find_set(a) != jobs.find_set(b) && rhythmsAgree(clusters[a], clusters[b], params.rhythmThreshold,
                                                               hostsWithin(clusters[a], clusters[b])))
            jobs.union_set(a, b);
    const auto& flowsEndpoints = endpoints;
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
            const IpAddr& ip = flowsEndpoints.at(e);
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
    // Per job: its nodes (for fetching its records), record and byte counts.
    {
        std::map<std::size_t, std::size_t> jobOfRoot;
        for (auto& [root, list] : members) jobOfRoot.emplace(root, jobOfRoot.size());
        const std::size_t nodes = S.nodeStats.size();
        if (jobOfNode) jobOfNode->assign(nodes, kNone);
        for (std::uint32_t v = 0; v < nodes; ++v) {
            if (S.clusterOfNode[v] == kNone) continue;
            const std::uint32_t j = std::uint32_t(jobOfRoot.at(jobs.find_set(S.clusterOfNode[v])));
            if (jobOfNode) (*jobOfNode)[v] = j;
            const std::vector<std::int64_t>& starts = S.epochStarts[S.nodeEndpoint[v]];
            const std::uint32_t k = S.nodeEpoch[v];
            RecognizedJob& job = result.jobs[j];
            job.nodes.push_back({S.nodeEndpoint[v], k ? starts[k - 1] : std::numeric_limits<std::int64_t>::min(),
                                 k < starts.size() ? starts[k] : std::numeric_limits<std::int64_t>::max()});
            job.recordCount += S.nodeStats[v].records;
            job.bytes += S.nodeStats[v].bytes;
        }
    }
    // Ordered by start, then first NIC; the node-to-job map follows.
    std::vector<std::uint32_t> byStart(result.jobs.size());
    std::iota(byStart.begin(), byStart.end(), 0u);
    std::stable_sort(byStart.begin(), byStart.end(), [&](std::uint32_t a, std::uint32_t b) {
        const RecognizedJob &A = result.jobs[a], &B = result.jobs[b];
        if (A.startNs != B.startNs) return A.startNs < B.startNs;
        return endpoints.at(A.nics.front()) < endpoints.at(B.nics.front());
    });
    std::vector<std::uint32_t> newIndex(byStart.size());
    std::vector<RecognizedJob> sorted;
    for (std::uint32_t k = 0; k < byStart.size(); ++k) {
        newIndex[byStart[k]] = k;
        sorted.push_back(std::move(result.jobs[byStart[k]]));
    }
    result.jobs = std::move(sorted);
    if (jobOfNode)
        for (std::uint32_t& j : *jobOfNode)
            if (j != kNone) j = newIndex[j];
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
    noteIdleNics(result, endpoints, topology);
    return result;
}

void noteIdleNics(RecognitionResult& result, const EndpointTable& endpoints, const Topology& topology) {
    std::vector<bool> busy(topology.nics.size(), false);
    for (const RecognizedJob& job : result.jobs)
        for (EndpointId e : job.nics)
            if (auto nic = topology.nicByIp(endpoints.at(e))) busy[std::size_t(*nic)] = true;
    for (RecognizedJob& job : result.jobs) {
        job.idleNics.clear();
        for (int h : job.hosts)
            for (int k : topology.hosts[std::size_t(h)].nics)
                if (!busy[std::size_t(k)]) job.idleNics.push_back(topology.nics[std::size_t(k)].ip);
    }
}

RecognitionResult recognizeJobs(const FlowTable& flows, const Topology& topology, const RecognitionParams& params,
                                const std::function<bool(double)>& progress, unsigned threads) {
    const std::size_t n = flows.size();
    RecognitionPasses passes(topology, params);
    using State = RecognitionPasses::State;
    State& S = *passes.m;
    // The passes read the records in parts side by side (rows [cuts[k], cuts[k + 1])), each pass giving what it
    // gives reading them in order (below): the same connections, graph, statistics, series and lists, bit for bit.
    const std::size_t parts = partsFor(n, threads, 4096);
    std::vector<std::size_t> cuts;
    for (std::size_t k = 0; k <= parts; ++k) cuts.push_back(n * k / parts);
    // Pass 1: the connections' lifetimes give each endpoint's epochs (recognition.h). A later part's connections
    // are added after the first's in the order that part first saw them: the order of one pass.
    {
        std::vector<State::Connections> more(parts - 1);
        parallelFor(parts, parts, [&](std::size_t k, unsigned) {
            State::Connections& conns = k ? more[k - 1] : S.conns;
            for (std::size_t i = cuts[k]; i < cuts[k + 1]; ++i)
                if (flows.isRoce(i))
                    conns.add(ConnKey{flows.src[i], flows.dst[i], flows.srcPort[i]}, flows.startNs[i], flows.end(i));
        });
        for (const State::Connections& later : more) S.conns.append(later);
    }
    passes.endConnections();
    if (progress && !progress(0.2)) throw Cancelled();
    // Pass 2: each endpoint's activity falls into its epochs (an (endpoint, epoch) is a node); join the two
    // nodes of each RoCE record, gather per node what the clusters need. A record's sender node is looked up
    // again where a later pass needs it (an epoch search, mostly none), not kept: 4 bytes a record, the peak of
    // a report's analysis once the columns read by recognition alone are let go (analyzeCaptureReleasing).
    // Parts after the first gather into statistics and a union-find of their own, joined to the first's after:
    // sums, minima, maxima and connected components do not depend on the order (a component's root is its
    // lowest node either way). Each part's record count per node places its records in the lists (below).
    using NodeStats = State::NodeStats;
    struct Part {
        std::vector<NodeStats> stats;
        std::vector<std::uint32_t> parent;
    };
    std::vector<Part> more(parts - 1);
    const std::size_t nodes = S.nodeStats.size();
    // Whether each part's rows come by start (for pass 3).
    std::vector<std::uint8_t> byStart(parts, 1);
    if (progress && !progress(0.2)) throw Cancelled(); // (then every 2^20 records the caller's thread reads)
    parallelFor(parts, parts, [&](std::size_t k, unsigned worker) {
        std::vector<NodeStats>& stats = k ? more[k - 1].stats : S.nodeStats;
        std::vector<std::uint32_t>& parent = k ? more[k - 1].parent : S.parent;
        if (k) {
            stats.resize(nodes);
            parent.resize(nodes);
            std::iota(parent.begin(), parent.end(), 0u);
        }
        std::int64_t before = k ? std::int64_t(flows.startNs[cuts[k] - 1]) : std::numeric_limits<std::int64_t>::min();
        bool inOrder = true;
        for (std::size_t i = cuts[k]; i < cuts[k + 1]; ++i) {
            const std::int64_t start = flows.startNs[i];
            inOrder = inOrder && start >= before;
            before = start;
            if (flows.isRoce(i))
                S.record(stats, parent, flows.src[i], flows.dst[i], start, flows.end(i), flows.bytes[i]);
            if (worker == 0 && progress && (i & 0xFFFFF) == 0 && i > 0 &&
                !progress(0.2 + 0.2 * double(i - cuts[k]) / double(cuts[k + 1] - cuts[k])))
                throw Cancelled();
        }
        byStart[k] = inOrder;
    });
    std::vector<std::vector<std::uint64_t>> recordsOfNode; // of parts [0, parts - 1), for the lists
    for (std::size_t k = 0; k + 1 < parts; ++k) {
        const std::vector<NodeStats>& stats = k ? more[k - 1].stats : S.nodeStats;
        recordsOfNode.emplace_back(nodes);
        for (std::uint32_t v = 0; v < nodes; ++v) recordsOfNode[k][v] = stats[v].records;
    }
    for (Part& part : more) {
        for (std::uint32_t v = 0; v < nodes; ++v) {
            const NodeStats& x = part.stats[v];
            NodeStats& st = S.nodeStats[v];
            st.records += x.records;
            st.bytes += x.bytes;
            st.first = std::min(st.first, x.first);
            st.last = std::max(st.last, x.last);
            st.touched = st.touched || x.touched;
            const std::uint32_t r = State::find(part.parent, v);
            if (r == v) continue;
            const std::uint32_t a = S.find(v), b = S.find(r);
            if (a != b) S.parent[std::max(a, b)] = std::min(a, b);
        }
        part = {};
    }
    if (progress && !progress(0.5)) throw Cancelled();
    // Pass 3, when clusters may merge: their traffic series. Where the rows come by start, each part's rows start
    // at a bin of their own: no bin is added to by two parts, each cell sums its bytes in record order as one pass
    // does. Otherwise the pass is made in one part.
    if (passes.endGraph(flows.endpoints)) {
        const bool inOrder = std::all_of(byStart.begin(), byStart.end(), [](std::uint8_t b) { return b != 0; });
        std::vector<std::size_t> at = inOrder ? cuts : std::vector<std::size_t>{0, n};
        for (std::size_t k = 1; k + 1 < at.size(); ++k) {
            at[k] = std::max(at[k], at[k - 1]);
            while (at[k] < n &&
                   S.binOf(std::max(flows.startNs[at[k]], S.lo)) == S.binOf(std::max(flows.startNs[at[k] - 1], S.lo)))
                ++at[k];
        }
        parallelFor(at.size() - 1, unsigned(at.size() - 1), [&](std::size_t k, unsigned) {
            for (std::size_t i = at[k]; i < at[k + 1]; ++i) {
                if (!flows.isRoce(i)) continue;
                const std::int64_t start = flows.startNs[i];
                passes.series(passes.senderNode(flows.src[i], start), start, flows.bytes[i]);
            }
        });
    }
    if (progress && !progress(0.7)) throw Cancelled();
    std::vector<std::uint32_t> jobOfNode;
    RecognitionResult result = passes.result(flows.endpoints, &jobOfNode);
    // The records of each job, in start order: one pass, into lists sized beforehand, each part's rows from where
    // the parts before it end (their record counts per node, by job).
    const std::size_t J = result.jobs.size();
    std::vector<std::uint32_t*> fill(parts * J);
    for (std::size_t j = 0; j < J; ++j) {
        result.jobs[j].records.resize(result.jobs[j].recordCount);
        fill[j] = result.jobs[j].records.data();
    }
    for (std::size_t k = 1; k < parts; ++k) {
        for (std::size_t j = 0; j < J; ++j) fill[k * J + j] = fill[(k - 1) * J + j];
        for (std::uint32_t v = 0; v < nodes; ++v)
            if (jobOfNode[v] != kNone) fill[k * J + jobOfNode[v]] += recordsOfNode[k - 1][v];
    }
    // Per endpoint its job where it has one epoch (most), so that a record's job is one lookup.
    constexpr std::uint32_t kEpochs = kNone - 1; // several epochs: the sender node's
    std::vector<std::uint32_t> jobOfEndpoint(S.endpoints, kNone);
    for (std::size_t e = 0; e < S.endpoints; ++e)
        jobOfEndpoint[e] = S.epochStarts[e].empty() ? jobOfNode[S.nodeBase[e]] : kEpochs;
    parallelFor(parts, parts, [&](std::size_t k, unsigned) {
        std::uint32_t** out = fill.data() + k * J;
        if (J == 1) {
            std::uint32_t* o = out[0];
            for (std::size_t i = cuts[k]; i < cuts[k + 1]; ++i)
                if (flows.isRoce(i)) *o++ = std::uint32_t(i);
        } else {
            for (std::size_t i = cuts[k]; i < cuts[k + 1]; ++i) {
                if (!flows.isRoce(i)) continue;
                const EndpointId e = flows.src[i];
                std::uint32_t j = jobOfEndpoint[e];
                if (j == kEpochs) j = jobOfNode[S.nodeOf(e, flows.startNs[i])];
                *out[j]++ = std::uint32_t(i);
            }
        }
    });
    if (progress && !progress(1.0)) throw Cancelled();
    return result;
}

} // namespace prism
