#include "analysis/parallelism.h"

#include "analysis/drains.h"
#include "analysis/exchanges.h"
#include "analysis/rhythm.h"
#include "analysis/stats.h"
#include "util/memory.h"
#include "util/parallel.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <unordered_map>

namespace prism {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// Record lists in compressed-sparse-row form: list k is idx[off[k] .. off[k+1]).
struct Csr {
    std::vector<std::uint32_t> off, idx;
    // Per-pair lists carry their records' times and sizes in list order instead of indices, so the per-pair
    // passes read memory sequentially instead of jumping across the whole capture. Durations and sizes as the
    // flow table holds them (4 bytes each while they fit): 16 bytes a record of the window, not 24.
    // (Every place filled, by the threads.)
    std::vector<std::int64_t, UnsetAllocator<std::int64_t>> startNs;
    HalvedColumn<std::uint64_t, std::uint32_t, UnsetAllocator<std::uint32_t>> durationNs, bytes;
    std::int64_t endNs(std::size_t q) const { return std::int64_t(std::uint64_t(startNs[q]) + durationNs[q]); }
    std::size_t size(std::size_t k) const { return off[k + 1] - off[k]; }
    const std::uint32_t* begin(std::size_t k) const { return idx.data() + off[k]; }
    const std::uint32_t* end(std::size_t k) const { return idx.data() + off[k + 1]; }
};

// Number of records of `x` that start within ± tol of the start of some record of `y`; both sorted by start.
// A collective between two peers (a two-member ring) sends both ways at once; pipeline neighbours send
// activations and gradients at different moments of the schedule.
std::size_t simultaneous(const std::int64_t* xb, const std::int64_t* xe, const std::int64_t* yb, const std::int64_t* ye,
                         std::int64_t tol) {
    std::size_t hits = 0;
    const std::int64_t* j = yb;
    for (auto p = xb; p != xe; ++p) {
        while (j != ye && *j < *p - tol) ++j;
        if (j != ye && *j <= *p + tol) ++hits;
    }
    return hits;
}

// Whether a pair that sends both ways at once turns at its quiets as pipeline neighbours do. In a jitter-free
// 1F1B steady state a stage's activation and the next stage's gradient go together (0.93-0.97 simultaneous,
// TP 8 x PP 4 with 0.5 ms forwards read DP 4); but the step ends with gradients only and opens with activations
// only: around the pair's quiets (gaps twice its usual one or more) the last sends before go one way (those
// within `tol` of the last) and the first after the other. A two-member ring or an expert exchange sends both
// ways on both sides. At least 4 quiets, 3 in 4 of them turns. `x`, `y`: the two directions' starts, sorted.
bool turnsAtQuiets(const std::int64_t* xb, const std::int64_t* xe, const std::int64_t* yb, const std::int64_t* ye,
                   std::int64_t tol) {
    std::vector<std::pair<std::int64_t, char>> sends;
    sends.reserve(std::size_t((xe - xb) + (ye - yb)));
    for (auto p = xb; p != xe; ++p) sends.emplace_back(*p, 0);
    for (auto p = yb; p != ye; ++p) sends.emplace_back(*p, 1);
    std::sort(sends.begin(), sends.end());
    std::vector<double> gaps;
    for (std::size_t i = 1; i < sends.size(); ++i)
        if (sends[i].first - sends[i - 1].first > tol) gaps.push_back(double(sends[i].first - sends[i - 1].first));
    if (gaps.size() < 8) return false;
    const double quiet = 2.0 * medianOf(gaps);
    // The direction of the sends within `tol` of send `i` (the last before a quiet, or the first after it);
    // -1 when they go both ways.
    const auto oneWay = [&](std::ptrdiff_t i, std::ptrdiff_t dir) {
        const char way = sends[std::size_t(i)].second;
        for (std::ptrdiff_t k = i + dir; k >= 0 && k < std::ptrdiff_t(sends.size()); k += dir) {
            if (std::abs(sends[std::size_t(k)].first - sends[std::size_t(i)].first) > tol) break;
            if (sends[std::size_t(k)].second != way) return -1;
        }
        return int(way);
    };
    std::size_t quiets = 0, turns = 0;
    for (std::size_t i = 1; i < sends.size(); ++i) {
        if (double(sends[i].first - sends[i - 1].first) < quiet) continue;
        ++quiets;
        const int before = oneWay(std::ptrdiff_t(i) - 1, -1), after = oneWay(std::ptrdiff_t(i), 1);
        if (before >= 0 && after >= 0 && before != after) ++turns;
    }
    return quiets >= 4 && 4 * turns >= 3 * quiets;
}

// Silences in a set of records sorted by start: (length, time the silence ends, time it began).
struct Silence {
    std::int64_t gap, end, begin;
};
// `start(r)`, `end(r)`: record r's start and end, of the records `recs` index, in start order.
template <typename Start, typename End>
std::vector<Silence> silences(Start start, End end, const std::vector<std::uint32_t>& recs) {
    std::vector<Silence> out;
    std::int64_t maxEnd = std::numeric_limits<std::int64_t>::min();
    for (std::uint32_t r : recs) {
        if (maxEnd != std::numeric_limits<std::int64_t>::min() && start(r) > maxEnd)
            out.push_back({start(r) - maxEnd, start(r), maxEnd});
        maxEnd = std::max(maxEnd, end(r));
    }
    return out;
}

std::int64_t medianGap(const std::vector<Silence>& gaps) {
    if (gaps.empty()) return 0;
    std::vector<std::int64_t> v;
    v.reserve(gaps.size());
    for (const auto& g : gaps) v.push_back(g.gap);
    return upperMedian(std::move(v));
}

// Per node, its one-way DP pairs out and in: a ring's hops over the network (`ends` index nodes).
struct RingDegrees {
    std::vector<int> in, out;
};
RingDegrees ringDegrees(const std::vector<PairInfo>& pairs,
                        const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ends, std::size_t n,
                        double asymmetryThreshold) {
    RingDegrees d{std::vector<int>(n, 0), std::vector<int>(n, 0)};
    for (std::size_t p = 0; p < pairs.size(); ++p)
        if (pairs[p].kind == PairKind::DP && pairs[p].asymmetry < asymmetryThreshold) {
            const bool ab = pairs[p].bytesAB > pairs[p].bytesBA;
            ++d.out[ab ? ends[p].first : ends[p].second];
            ++d.in[ab ? ends[p].second : ends[p].first];
        }
    return d;
}

// DP peers share one ring: a pair that carries traffic both ways between members of two different rings, each
// seen whole on the network (a cycle of one-way hops: a ring that passes through a host over NVLink shows in
// pieces), is not of one DP group — it is a pipeline pair whose activations and gradients cross at once, as in
// a jitter-free 1F1B steady state (TP 1 x PP 6 x DP 9 with 0.69 ms forwards read DP 54). Whole rings: per
// node the ring's component, or -1.
std::vector<int> wholeRings(const std::vector<PairInfo>& pairs,
                            const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ends, std::size_t n,
                            double asymmetryThreshold) {
    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
    Graph g(n);
    for (std::size_t p = 0; p < pairs.size(); ++p)
        if (pairs[p].kind == PairKind::DP && pairs[p].asymmetry < asymmetryThreshold)
            boost::add_edge(ends[p].first, ends[p].second, g);
    const auto [in, out] = ringDegrees(pairs, ends, n, asymmetryThreshold);
    std::vector<int> comp(n);
    const int comps = boost::connected_components(g, comp.data());
    std::vector<char> whole(std::size_t(comps), 1);
    std::vector<int> size(std::size_t(comps), 0);
    for (std::size_t i = 0; i < n; ++i) {
        ++size[std::size_t(comp[i])];
        if (in[i] != 1 || out[i] != 1) whole[std::size_t(comp[i])] = 0;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (!whole[std::size_t(comp[i])] || size[std::size_t(comp[i])] < 3) comp[i] = -1;
    return comp;
}

// Expert all-to-all between EP 2 peers on top of a ring's hop (EP 2 in DP 4: the hops 0→1 and 2→3 ride on the EP
// pairs, 1→2 and 3→0 go alone) reads as a pipeline pair: traffic both ways all through the step. But a ring's
// hops over the network go one way, and a ring member that only receives them must pass the sync on: over
// NVLink (then its host has a NIC that only sends them), or over one of its both-ways pairs to a member that
// only sends them. The pairs that close rings so, one per such member, are DP. `host`: per node, -1 unknown.
std::vector<std::size_t> ringClosingPairs(const std::vector<PairInfo>& pairs,
                                          const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ends,
                                          const std::vector<int>& host, double asymmetryThreshold) {
    const std::size_t n = host.size();
    const auto [in, out] = ringDegrees(pairs, ends, n, asymmetryThreshold);
    auto receiverOnly = [&](std::size_t i) { return in[i] == 1 && out[i] == 0; };
    auto senderOnly = [&](std::size_t i) { return out[i] == 1 && in[i] == 0; };
    std::set<int> receivingHosts, sendingHosts;
    for (std::size_t i = 0; i < n; ++i) {
        if (receiverOnly(i)) receivingHosts.insert(host[i]);
        if (senderOnly(i)) sendingHosts.insert(host[i]);
    }
    std::vector<std::vector<std::size_t>> candidates(n);
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        if (pairs[p].kind != PairKind::PP || pairs[p].asymmetry < asymmetryThreshold) continue;
        for (auto [a, b] : {ends[p], std::pair(ends[p].second, ends[p].first)})
            if (receiverOnly(a) && senderOnly(b) && host[a] >= 0 && host[b] >= 0 && host[a] != host[b] &&
                !sendingHosts.count(host[a]) && !receivingHosts.count(host[b]))
                candidates[a].push_back(p);
    }
    std::vector<std::size_t> closing;
    for (const auto& c : candidates)
        if (c.size() == 1) closing.push_back(c.front());
    return closing;
}

// The job's idle NICs on `host` (no RoCE traffic: RecognizedJob::idleNics) whose GPUs lie between the first and
// the last of the ring ends' (`ins`, `outs`: indices into job.nics), in GPU order.
std::vector<IpAddr> idleNicsBetween(const FlowTable& flows, const Topology& topology, int host,
                                    const RecognizedJob& job, const std::vector<std::size_t>& ins,
                                    const std::vector<std::size_t>& outs) {
    const auto firstGpu = [&](const IpAddr& ip) {
        const Nic& nic = topology.nics[std::size_t(*topology.nicByIp(ip))];
        return nic.gpus.empty() ? -1 : nic.gpus.front();
    };
    int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
    for (const auto* ends : {&ins, &outs})
        for (std::size_t i : *ends) {
            const int gpu = firstGpu(flows.endpoints.at(job.nics[i]));
            lo = std::min(lo, gpu), hi = std::max(hi, gpu);
        }
    std::vector<std::pair<int, IpAddr>> between;
    for (const IpAddr& ip : job.idleNics) {
        const auto nic = topology.nicByIp(ip);
        if (nic && topology.nics[std::size_t(*nic)].host == host && firstGpu(ip) > lo && firstGpu(ip) < hi)
            between.emplace_back(firstGpu(ip), ip);
    }
    std::sort(between.begin(), between.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<IpAddr> out;
    for (const auto& [gpu, ip] : between) out.push_back(ip);
    return out;
}

// The rungs of pipelines joined pairwise (ParallelismResult, EP = DP = 2): PP pairs that are, at both ends, the
// most simultaneous PP pair, at 0.3 or more and 4x the end's next one; only where the PP graph branches and taking
// them out leaves no node with more than two PP peers. Empty otherwise.
std::vector<std::size_t> ladderRungs(const std::vector<PairInfo>& pairs,
                                     const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ends, std::size_t n) {
    constexpr double kLeast = 0.3, kAbove = 4.0;
    std::vector<int> degree(n, 0);
    std::vector<std::size_t> best(n, pairs.size());
    std::vector<double> top(n, -1.0), next(n, 0.0);
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        if (pairs[p].kind != PairKind::PP) continue;
        for (std::uint32_t v : {ends[p].first, ends[p].second}) {
            ++degree[v];
            const double s = pairs[p].simultaneity;
            if (s > top[v]) next[v] = std::max(next[v], top[v]), top[v] = s, best[v] = p;
            else next[v] = std::max(next[v], s);
        }
    }
    if (std::none_of(degree.begin(), degree.end(), [](int d) { return d > 2; })) return {};
    std::vector<std::size_t> rungs;
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        const auto [a, b] = ends[p];
        if (pairs[p].kind != PairKind::PP || best[a] != p || best[b] != p || pairs[p].simultaneity < kLeast) continue;
        if (pairs[p].simultaneity < kAbove * std::max(next[a], next[b])) continue;
        rungs.push_back(p);
        --degree[a], --degree[b];
    }
    if (std::any_of(degree.begin(), degree.end(), [](int d) { return d > 2; })) return {};
    return rungs;
}

} // namespace

ParallelismResult inferParallelism(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                                   const ParallelismParams& params) {
    ParallelismResult res;
    const std::size_t n = job.nics.size();
    std::vector<std::uint32_t> localOf(flows.endpoints.size(), kNone); // endpoint -> index in job.nics
    for (std::size_t i = 0; i < n; ++i) localOf[job.nics[i]] = std::uint32_t(i);
    auto local = [&](EndpointId e) { return localOf[e]; };

    // Pair ids: dense matrix for usual job sizes, hash map beyond.
    const bool dense = n <= 4096;
    std::vector<std::uint32_t> pairIndex(dense ? n * n : 0, kNone);
    std::unordered_map<std::uint64_t, std::uint32_t> pairHash;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairEnds;
    // The signatures are read over the job's steady state: at most `windowRecords` consecutive records from
    // the middle of the job (a time window, since records are in start order). This keeps the stage
    // bounded on hour-long captures; the window still spans many steps.
    std::span<const std::uint32_t> records(job.records);
    if (params.windowRecords && records.size() > params.windowRecords)
        records = records.subspan((records.size() - params.windowRecords) / 2, params.windowRecords);
    const std::size_t m = records.size();
    // Pass 1: the pair and direction of each record (slot = pair * 2 + direction), counted per slot.
    // (Unset, as the lists' starts below: every place is filled, and the zeros cost 2 ms on one core a job on `large`.)
    std::vector<std::uint32_t, UnsetAllocator<std::uint32_t>> slot(m);
    std::vector<std::uint32_t> count; // per slot
    count.reserve(2 * 4 * n);
    for (std::size_t k = 0; k < m; ++k) {
        std::uint32_t r = records[k];
        std::uint32_t s = local(flows.src[r]), d = local(flows.dst[r]);
        std::uint32_t a = std::min(s, d), b = std::max(s, d);
        std::uint32_t* id;
        if (dense)
            id = &pairIndex[std::size_t(a) * n + b];
        else
            id = &pairHash.try_emplace((std::uint64_t(a) << 32) | b, kNone).first->second;
        if (*id == kNone) [[unlikely]] {
            *id = std::uint32_t(pairEnds.size());
            pairEnds.push_back({a, b});
            count.push_back(0);
            count.push_back(0);
        }
        const std::uint32_t sl = *id * 2 + (s == a ? 0 : 1);
        slot[k] = sl;
        ++count[sl];
    }
    const std::size_t pairs = pairEnds.size();

    // Record lists per pair direction and per endpoint (CSR).
    Csr byDir, byNode; // byNode is built only when needed (jobs without DP traffic)
    byDir.off.assign(pairs * 2 + 1, 0);
    for (std::size_t i = 0; i < 2 * pairs; ++i) byDir.off[i + 1] = byDir.off[i] + count[i];
    byDir.startNs.resize(m);
    byDir.durationNs.resizeToFill(m);
    byDir.bytes.resizeToFill(m);
    {
        // Pass 2: times and sizes into per-slot order. The threads take slots of about as many records each, each
        // reading every record's slot and copying its own slots' records (their positions apart): the copy is a
        // write missing the cache a record (on `large` 15 ms of the 30 ms the job-0's parallelism took on one core).
        // The columns take their high halves before, where the table's have them: no thread widens one.
        if (flows.durationNs.wide()) byDir.durationNs.widen();
        if (flows.bytes.wide()) byDir.bytes.widen();
        std::vector<std::uint32_t> fillDir(byDir.off.begin(), byDir.off.end() - 1);
        const std::size_t parts = partsFor(m, params.threads, 4096);
        std::vector<std::uint32_t> firstSlot{0}; // the threads' slots: [firstSlot[w], firstSlot[w + 1])
        for (std::size_t w = 1; w < parts; ++w)
            firstSlot.push_back(std::uint32_t(std::lower_bound(byDir.off.begin(), byDir.off.end() - 1, m * w / parts) -
                                              byDir.off.begin()));
        firstSlot.push_back(std::uint32_t(2 * pairs));
        parallelFor(parts, unsigned(parts), [&](std::size_t w, unsigned) {
            const std::uint32_t lo = firstSlot[w], hi = firstSlot[w + 1];
            for (std::size_t k = 0; k < m; ++k) {
                const std::uint32_t sl = slot[k];
                if (sl < lo || sl >= hi) continue;
                const std::uint32_t r = records[k];
                const std::uint32_t pos = fillDir[sl]++;
                byDir.startNs[pos] = flows.startNs[r];
                byDir.durationNs.set(pos, flows.durationNs[r]);
                byDir.bytes.set(pos, flows.bytes[r]);
            }
        });
    }
    auto buildByNode = [&] {
        if (!byNode.off.empty()) return;
        byNode.off.assign(n + 1, 0);
        std::vector<std::uint32_t> srcLocal(m), dstLocal(m);
        for (std::size_t k = 0; k < m; ++k) {
            srcLocal[k] = local(flows.src[records[k]]);
            dstLocal[k] = local(flows.dst[records[k]]);
            ++byNode.off[srcLocal[k] + 1];
            ++byNode.off[dstLocal[k] + 1];
        }
        for (std::size_t i = 1; i < byNode.off.size(); ++i) byNode.off[i] += byNode.off[i - 1];
        byNode.idx.resize(2 * m);
        std::vector<std::uint32_t> fillNode(byNode.off.begin(), byNode.off.end() - 1);
        for (std::size_t k = 0; k < m; ++k) {
            byNode.idx[fillNode[srcLocal[k]]++] = std::uint32_t(k); // job-local index
            byNode.idx[fillNode[dstLocal[k]]++] = std::uint32_t(k);
        }
    };

    // The loops over pairs and over nodes below run on every core, an item at a time (each writes only its own
    // pair's or node's results; their inputs are read-only): on the first half of `large` they were 9 ms of each
    // job's parallelism on one core.
    const unsigned threads = unsigned(partsFor(m, params.threads, 4096));
    // Signature of each pair.
    res.pairs.resize(pairs);
    parallelFor(pairs, threads, [&](std::size_t p, unsigned) {
        PairInfo& pi = res.pairs[p];
        pi.a = job.nics[pairEnds[p].first];
        pi.b = job.nics[pairEnds[p].second];
        const std::size_t ab = p * 2, ba = p * 2 + 1;
        pi.recordsAB = std::uint32_t(byDir.size(ab));
        pi.recordsBA = std::uint32_t(byDir.size(ba));
        // Distinct record sizes, counted up to kMaxDistinct (pipelines repeat a few sizes).
        constexpr std::size_t kMaxDistinct = 32;
        std::uint64_t sizes[kMaxDistinct];
        std::size_t distinct = 0, lastHit = 0;
        auto count = [&](std::uint64_t v) {
            // Once the cap is reached nothing can change; sizes come in runs, so the last hit is tried first.
            if (distinct == kMaxDistinct || (distinct && sizes[lastHit] == v)) return;
            for (std::size_t i = 0; i < distinct; ++i)
                if (sizes[i] == v) {
                    lastHit = i;
                    return;
                }
            lastHit = distinct;
            sizes[distinct++] = v;
        };
        for (std::size_t q = byDir.off[ab]; q < byDir.off[ab + 1]; ++q)
            pi.bytesAB += byDir.bytes[q], count(byDir.bytes[q]);
        for (std::size_t q = byDir.off[ba]; q < byDir.off[ba + 1]; ++q)
            pi.bytesBA += byDir.bytes[q], count(byDir.bytes[q]);
        pi.distinctSizes = std::uint32_t(distinct);
        std::uint64_t hi = std::max(pi.bytesAB, pi.bytesBA), lo = std::min(pi.bytesAB, pi.bytesBA);
        pi.asymmetry = hi ? double(lo) / double(hi) : 0.0;
        std::size_t total = pi.recordsAB + pi.recordsBA;
        std::size_t hits =
            simultaneous(byDir.startNs.data() + byDir.off[ab], byDir.startNs.data() + byDir.off[ab + 1],
                         byDir.startNs.data() + byDir.off[ba], byDir.startNs.data() + byDir.off[ba + 1],
                         params.overlapToleranceNs) +
            simultaneous(byDir.startNs.data() + byDir.off[ba], byDir.startNs.data() + byDir.off[ba + 1],
                         byDir.startNs.data() + byDir.off[ab], byDir.startNs.data() + byDir.off[ab + 1],
                         params.overlapToleranceNs);
        pi.simultaneity = total ? double(hits) / double(total) : 0.0;
        pi.kind = (pi.asymmetry < params.asymmetryThreshold || pi.simultaneity > params.simultaneityThreshold)
                      ? PairKind::DP
                      : PairKind::PP;
        if (pi.kind == PairKind::DP && pi.asymmetry >= params.asymmetryThreshold &&
            turnsAtQuiets(byDir.startNs.data() + byDir.off[ab], byDir.startNs.data() + byDir.off[ab + 1],
                          byDir.startNs.data() + byDir.off[ba], byDir.startNs.data() + byDir.off[ba + 1],
                          params.overlapToleranceNs))
            pi.kind = PairKind::PP;
    });

    // DP peers share one ring: a both-ways pair between two whole rings is a pipeline pair (wholeRings).
    {
        const std::vector<int> ring = wholeRings(res.pairs, pairEnds, n, params.asymmetryThreshold);
        for (std::size_t p = 0; p < pairs; ++p) {
            const int a = ring[pairEnds[p].first], b = ring[pairEnds[p].second];
            if (res.pairs[p].kind == PairKind::DP && res.pairs[p].asymmetry >= params.asymmetryThreshold && a >= 0 &&
                b >= 0 && a != b)
                res.pairs[p].kind = PairKind::PP;
        }
    }
    // A two-member DP ring sends both ways at once at every hop (simultaneity 1.0, short of it by lost records
    // only); so, in a jitter-free 1F1B steady state, do a stage's activation to the next stage and that stage's
    // gradient back (0.71-0.84 near the end of an 8-stage pipeline of 14 micro-batches: the last four stages read
    // as one DP group). A rank of a two-member ring has one such partner, an expert all-to-all's members all
    // alike: a rank with two or more both-way DP partners keeps those within 0.05 of its most simultaneous one
    // (at 0.9 or more), and the others are pipeline pairs.
    {
        std::vector<std::vector<std::size_t>> bothWays(n);
        for (std::size_t p = 0; p < pairs; ++p)
            if (res.pairs[p].kind == PairKind::DP && res.pairs[p].asymmetry >= params.asymmetryThreshold) {
                bothWays[pairEnds[p].first].push_back(p);
                bothWays[pairEnds[p].second].push_back(p);
            }
        std::vector<char> toPp(pairs, 0);
        for (const auto& mine : bothWays) {
            if (mine.size() < 2) continue;
            double best = 0;
            for (std::size_t p : mine) best = std::max(best, res.pairs[p].simultaneity);
            if (best < 0.9) continue;
            for (std::size_t p : mine)
                if (res.pairs[p].simultaneity < best - 0.05) toPp[p] = 1;
        }
        for (std::size_t p = 0; p < pairs; ++p)
            if (toPp[p]) res.pairs[p].kind = PairKind::PP;
    }

    std::size_t exchangePairs = 0;
    // EP = DP = 2: a two-member ring with an expert exchange on it carries traffic both ways all through the
    // step, one peer a rank, as a pipeline pair does; its exchanges cut into pieces read 0.66 simultaneous (under
    // the threshold), the rank's pipeline pairs 0.004, and the two pipelines joined by such rungs branch (TP 2 x
    // PP 7 x DP 2 with EP 2 read PP 3 x DP 1). Where the PP pairs branch, a pair that is the most simultaneous of
    // both its ends' PP pairs, at 0.3 or more and 4x their next, is a DP pair, when taking all such pairs out
    // leaves no branch (a pipeline whose last pairs send both ways at once does not branch).
    for (std::size_t p : ladderRungs(res.pairs, pairEnds, n)) {
        res.pairs[p].kind = PairKind::DP;
        ++exchangePairs;
    }
    // Expert all-to-all with EP >= 3 where it drowns the ring (EP = DP: every pair of a group carries traffic both
    // ways through the step): a pipeline-like signature on every pair, but pipelines are paths, and an all-to-all
    // joins its members in cliques, each member posting its sends to all the others at once. A PP pair (a, b) with
    // a third node c paired to both, where a's sends to b start with its sends to c (half of them or more), is an
    // exchange: DP. (A three-stage interleaved ring is a triangle too, but a stage sends its
    // activations and its gradients at different moments.) EP = 2 has no third member: see docs/ENGINE.md.
    {
        auto pairOf = [&](std::uint32_t a, std::uint32_t b) -> std::uint32_t {
            if (a > b) std::swap(a, b);
            if (dense) return pairIndex[std::size_t(a) * n + b];
            auto it = pairHash.find((std::uint64_t(a) << 32) | b);
            return it == pairHash.end() ? kNone : it->second;
        };
        // Starts of a's sends to b (the slot of direction a -> b).
        auto sendsOf = [&](std::uint32_t a, std::uint32_t b, std::uint32_t p) {
            const std::size_t sl = std::size_t(p) * 2 + (a < b ? 0 : 1);
            return std::pair(byDir.startNs.data() + byDir.off[sl], byDir.startNs.data() + byDir.off[sl + 1]);
        };
        // (The third pair may be of either kind: where the ring's hops ride on some pairs, those read as DP.)
        std::vector<std::vector<std::uint32_t>> peersOf(n);
        for (std::size_t p = 0; p < pairs; ++p) {
            peersOf[pairEnds[p].first].push_back(pairEnds[p].second);
            peersOf[pairEnds[p].second].push_back(pairEnds[p].first);
        }
        std::vector<char> exchange(pairs, 0);
        for (std::uint32_t a = 0; a < n; ++a) {
            if (peersOf[a].size() < 2) continue;
            for (std::uint32_t b : peersOf[a]) {
                const std::uint32_t ab = pairOf(a, b);
                if (res.pairs[ab].kind != PairKind::PP || exchange[ab]) continue;
                for (std::uint32_t c : peersOf[a]) {
                    if (c == b || pairOf(b, c) == kNone) continue;
                    const auto [xb, xe] = sendsOf(a, b, ab);
                    const auto [yb, ye] = sendsOf(a, c, pairOf(a, c));
                    if (xe - xb < 4 ||
                        2 * simultaneous(xb, xe, yb, ye, params.overlapToleranceNs) < std::size_t(xe - xb))
                        continue;
                    exchange[ab] = 1;
                    break;
                }
            }
        }
        for (std::size_t p = 0; p < pairs; ++p)
            if (exchange[p]) {
                res.pairs[p].kind = PairKind::DP;
                ++exchangePairs; // said with the DP peers' all-to-all below
            }
    }

    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
    // Expert-parallel all-to-all among DP peers (mixture of experts) also joins DP peers that are not ring
    // neighbours, with traffic both ways through the step: a pipeline-like signature. But pipeline neighbours
    // are of different stages, never of one DP group: a PP pair whose ends the DP pairs already join is DP.
    // The connected components of the pairs of one kind (a component number per node).
    auto componentsOf = [&](PairKind kind) {
        Graph g(n);
        for (std::size_t p = 0; p < pairs; ++p)
            if (res.pairs[p].kind == kind) boost::add_edge(pairEnds[p].first, pairEnds[p].second, g);
        std::vector<int> comp(n);
        boost::connected_components(g, comp.data());
        return comp;
    };
    {
        std::vector<int> hostOfNode(n, -1);
        for (std::size_t i = 0; i < n; ++i)
            if (auto nic = topology.nicByIp(flows.endpoints.at(job.nics[i])))
                hostOfNode[i] = topology.nics[std::size_t(*nic)].host;
        for (std::size_t p : ringClosingPairs(res.pairs, pairEnds, hostOfNode, params.asymmetryThreshold)) {
            res.pairs[p].kind = PairKind::DP;
            ++exchangePairs;
        }
    }
    {
        const std::vector<int> group = componentsOf(PairKind::DP);
        std::size_t peers = exchangePairs;
        for (std::size_t p = 0; p < pairs; ++p)
            if (res.pairs[p].kind == PairKind::PP && group[pairEnds[p].first] == group[pairEnds[p].second]) {
                res.pairs[p].kind = PairKind::DP;
                ++peers;
            }
        if (peers)
            res.notes.push_back(std::to_string(peers) +
                                " pairs of DP peers exchange both ways through the step (expert-parallel all-to-all): "
                                "counted with their DP group. A GPU slow inside such a group holds the whole group "
                                "back at every all-to-all; it is named by its sends, which start last each time");
    }
    // Collectives inside one pipeline — the tied-embedding all-reduce between its first and last stage every
    // step — look like a two-member DP ring, but DP peers never share a pipeline: a DP pair whose ends are
    // joined by PP pairs belongs to no DP group (it would merge the groups of the first and last stages).
    {
        const std::vector<int> pipeline = componentsOf(PairKind::PP);
        for (std::size_t p = 0; p < pairs; ++p)
            if (res.pairs[p].kind == PairKind::DP && pipeline[pairEnds[p].first] == pipeline[pairEnds[p].second])
                res.pairs[p].pipelineCollective = true;
    }
    // DP groups: connected components of the DP pairs.
    Graph g(n);
    // One-way DP pairs are ring hops, sender to receiver. A ring seen whole gives each member one hop out and
    // one in; a ring that passes through a host over NVLink (DP peers inside a host, as with TP 4 on 8 GPUs)
    // leaves there a NIC that only receives and one that only sends. On each host the k-th such receiver is
    // joined to the k-th sender (in GPU order: Megatron's rank order keeps the TP ranks of the DP peers of one
    // host in the same order), so the ring comes out whole and DP counts its intra-host members.
    std::vector<int> ringOut(n, 0), ringIn(n, 0);
    std::vector<bool> dpEnd(n, false), ppEnd(n, false);
    bool ringsThroughHosts = false;
    std::vector<std::pair<std::size_t, IpAddr>> quietOf; // (the ring's entry, a NIC without traffic it passes)
    for (std::size_t p = 0; p < pairs; ++p) {
        const PairInfo& pi = res.pairs[p];
        if (pi.kind == PairKind::PP) ppEnd[pairEnds[p].first] = ppEnd[pairEnds[p].second] = true;
        if (pi.kind != PairKind::DP || pi.pipelineCollective) continue;
        dpEnd[pairEnds[p].first] = dpEnd[pairEnds[p].second] = true;
        boost::add_edge(pairEnds[p].first, pairEnds[p].second, g);
        if (pi.asymmetry >= params.asymmetryThreshold) continue;
        const bool ab = pi.bytesAB > pi.bytesBA;
        ++ringOut[ab ? pairEnds[p].first : pairEnds[p].second];
        ++ringIn[ab ? pairEnds[p].second : pairEnds[p].first];
    }
    {
        std::map<int, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> ends; // host -> (in, out)
        std::map<int, std::vector<std::size_t>> silent; // host -> NICs with PP pairs and no DP pair
        for (std::size_t i = 0; i < n; ++i) {
            auto nic = topology.nicByIp(flows.endpoints.at(job.nics[i]));
            if (!nic || topology.nics[std::size_t(*nic)].host < 0) continue;
            const int host = topology.nics[std::size_t(*nic)].host;
            auto& [in, out] = ends[host];
            if (ringIn[i] > 0 && ringOut[i] == 0) in.push_back(i);
            if (ringOut[i] > 0 && ringIn[i] == 0) out.push_back(i);
            if (!dpEnd[i] && ppEnd[i]) silent[host].push_back(i);
        }
        for (auto& [host, io] : ends) {
            const std::size_t rings = io.first.size();
            if (rings == 0 || rings != io.second.size()) continue;
            for (std::size_t k = 0; k < rings; ++k) boost::add_edge(io.first[k], io.second[k], g);
            ringsThroughHosts = true;
            // Members a ring passes between its entry and its exit send nothing over the network for DP (more
            // than two DP peers a host: TP 2 with four replicas on 8 GPUs): their only pairs are PP. Taken in
            // the same GPU order, round the host's rings, when they share them out evenly.
            const auto it = silent.find(host);
            if (it != silent.end() && it->second.size() % rings == 0)
                for (std::size_t k = 0; k < it->second.size(); ++k)
                    boost::add_edge(it->second[k], io.first[k % rings], g);
            // Without a pipeline those members send nothing at all on the RoCE network (TP 2 x DP 8 on 2 hosts
            // of four NICs: the ring enters at the first NIC and leaves at the last): NICs of the host between the
            // ring's ends that carry no RoCE record are theirs, shared out the same way.
            const std::vector<IpAddr> idle = idleNicsBetween(flows, topology, host, job, io.first, io.second);
            if (idle.size() % rings == 0)
                for (std::size_t k = 0; k < idle.size(); ++k) quietOf.emplace_back(io.first[k % rings], idle[k]);
        }
        if (ringsThroughHosts)
            res.notes.push_back("DP rings pass through hosts over NVLink (a NIC that only receives ring traffic "
                                "and one that only sends on the same host): their intra-host members are counted "
                                "in DP, joined in GPU order");
        if (!quietOf.empty())
            res.notes.push_back(std::to_string(quietOf.size()) +
                                " NICs between a DP ring's ends on a host carry no RoCE traffic at all: the ring passes "
                                "their GPUs over NVLink; they are counted as its members");
    }
    std::vector<int> comp(n);
    int comps = boost::connected_components(g, comp.data());
    res.dpGroups.assign(std::size_t(comps), {});
    res.quietMembers.assign(std::size_t(comps), {});
    for (std::size_t i = 0; i < n; ++i) res.dpGroups[std::size_t(comp[i])].push_back(job.nics[i]);
    for (const auto& [entry, ip] : quietOf) res.quietMembers[std::size_t(comp[entry])].push_back(ip);

    // PP pairs: orient each pair by the direction that speaks first after a step boundary. In every
    // step a stage ends with its DP gradient sync, after all of its PP transfers; so the first PP transfer
    // on a pair after a DP burst of either end is forward (an activation). Without DP traffic (dp = 1) the
    // boundaries are the long silences of the two endpoints' combined activity.
    std::vector<std::vector<std::int64_t>> burstEnds(n);
    // Where each node's DP bursts begin: the last PP transfer before a sync is a gradient (a stage's backward
    // comes before its sync, and an overlapped sync begins during its last backward). After a burst's end the
    // first transfer is forward only where the burst ends the step: a distributed optimizer's all-gather opens
    // the step and overlaps its first forwards, and once it ends the pipeline may already be sending gradients
    // (every pipeline of a ZeRO job with an overlapped gather voted itself reversed). Empty where the bursts are
    // the coarse rhythm over DP traffic all through the step (their ends vote then).
    std::vector<std::vector<std::pair<std::int64_t, double>>> burstStarts(n); // (start, the quiet before it)
    {
        // Expert all-to-all among the DP peers of a group (exchanges.h) leaves the DP series: a node's bursts
        // are then its ring's syncs, at step ends (with the exchanges in, its bursts end mid-step and vote
        // nothing, and the coarse rhythm below had to find the syncs). In such a group every node takes the
        // group's ring records: a member whose two hops both lie on expert pairs (EP 4 in DP 8: members 1, 2,
        // 5, 6) keeps none of its own, and a ring's members sync together.
        std::vector<char> exchange(m, 0); // per position in byDir
        std::map<int, std::vector<std::uint32_t>> ringOf; // groups with exchanges: their other records, by start
        // Only groups with a pair that carries traffic both ways can hold exchanges (rings alone go one way).
        std::vector<char> bothWays(std::size_t(comps), 0);
        for (std::size_t p = 0; p < pairs; ++p) {
            const auto [a, b] = pairEnds[p];
            if (res.pairs[p].kind == PairKind::DP && comp[a] == comp[b] && byDir.off[p * 2] < byDir.off[p * 2 + 1] &&
                byDir.off[p * 2 + 1] < byDir.off[p * 2 + 2])
                bothWays[std::size_t(comp[a])] = 1;
        }
        if (std::find(bothWays.begin(), bothWays.end(), 1) != bothWays.end()) {
            struct At {
                std::int64_t s;
                std::uint32_t q, pairDir; // position in byDir, and p * 2 + dir
            };
            std::vector<At> order; // by start, then position (as a stable sort)
            for (std::size_t p = 0; p < pairs; ++p) {
                const auto [a, b] = pairEnds[p];
                if (res.pairs[p].kind != PairKind::DP || comp[a] != comp[b] || !bothWays[std::size_t(comp[a])])
                    continue;
                for (std::uint32_t d = std::uint32_t(p * 2); d < p * 2 + 2; ++d)
                    for (std::uint32_t q = byDir.off[d]; q < byDir.off[d + 1]; ++q)
                        order.push_back({byDir.startNs[q], q, d});
            }
            std::sort(order.begin(), order.end(),
                      [](const At& x, const At& y) { return std::pair(x.s, x.q) < std::pair(y.s, y.q); });
            std::vector<DpRecord> sorted;
            sorted.reserve(order.size());
            for (const At& o : order) {
                const auto [a, b] = pairEnds[o.pairDir / 2];
                const bool back = o.pairDir % 2;
                sorted.push_back(
                    {o.s, byDir.endNs(o.q), std::int32_t(back ? b : a), std::int32_t(back ? a : b), comp[a]});
            }
            const std::vector<char> flag = expertExchanges(sorted, n, params.exchangeWindowNs);
            for (std::size_t i = 0; i < order.size(); ++i)
                if (flag[i]) {
                    exchange[order[i].q] = 1;
                    ringOf[sorted[i].group];
                }
            for (std::size_t i = 0; i < order.size(); ++i)
                if (!flag[i] && ringOf.count(sorted[i].group)) ringOf[sorted[i].group].push_back(order[i].q);
        }
        // DP records of each node, in start order: its records (job-local indices) on DP pairs.
        // (Merging the few sorted DP pair lists of a node is cache-friendly; filtering its records is not. A node's
        // DP pairs go in pair order, each in both directions: on a tie the records merged before come first.)
        std::vector<std::vector<std::uint32_t>> dpPairsOf(n);
        for (std::size_t p = 0; p < pairs; ++p)
            if (res.pairs[p].kind == PairKind::DP)
                for (std::uint32_t v : {pairEnds[p].first, pairEnds[p].second})
                    dpPairsOf[v].push_back(std::uint32_t(p));
        parallelFor(n, threads, [&](std::size_t v, unsigned) {
            std::vector<std::uint32_t> recs;
            if (auto it = ringOf.find(comp[v]); it != ringOf.end()) {
                recs = it->second;
            } else {
                for (std::uint32_t p : dpPairsOf[v])
                    for (std::size_t dir = 0; dir < 2; ++dir) {
                        std::vector<std::uint32_t> merged;
                        merged.reserve(recs.size() + byDir.size(p * 2 + dir));
                        const std::uint32_t first = byDir.off[p * 2 + dir], last = byDir.off[p * 2 + dir + 1];
                        auto it = recs.begin();
                        for (std::uint32_t q = first; q < last; ++q) { // merge positions by start time
                            if (exchange[q]) continue;
                            while (it != recs.end() && byDir.startNs[*it] <= byDir.startNs[q]) merged.push_back(*it++);
                            merged.push_back(q);
                        }
                        merged.insert(merged.end(), it, recs.end());
                        recs.swap(merged);
                    }
            }
            if (recs.empty()) return;
            auto gaps = silences([&](std::uint32_t r) { return byDir.startNs[r]; },
                                 [&](std::uint32_t r) { return byDir.endNs(r); }, recs);
            std::int64_t threshold = params.boundaryGapFactor * double(std::max<std::int64_t>(medianGap(gaps), 1));
            // Every quiet of 50 us or more starts a burst for the vote, weighed by its length: the step's syncs
            // follow the longest and outweigh the rest, however few the node's DP records (one record a bucket
            // put the threshold above the step's quiet, and one vote a node, after a pause, decided a pair).
            for (auto& [gap, t, before] : gaps) {
                if (gap > threshold) burstEnds[v].push_back(before);
                if (gap >= 50'000) burstStarts[v].push_back({t, double(gap)});
            }
            std::int64_t last = 0;
            for (std::uint32_t q : recs) last = std::max(last, byDir.endNs(q));
            burstEnds[v].push_back(last);
            // DP traffic all through the step (expert all-to-all in every forward and backward): its bursts
            // end mid-step, half before a forward's activation, half before a backward's gradient, and vote
            // nothing. The step's syncs are the coarser rhythm over them (rhythm.h chooseCoarseCuts over the
            // node's DP pieces): the ends followed by the longest quiet (the optimizer, then the first forwards).
            // A distributed optimizer's collectives make such a rhythm too, cut after the all-gather (the passes
            // between it and the next reduce-scatter are the longest quiet), and the pipeline may be sending
            // gradients by the time it ends: so the start after each cut (the next sync's) votes as any burst
            // start does, the last transfer before it a gradient (TP 4 x PP 2 x DP 8 with 1 ms records: 18 of
            // 32 chains reversed).
            if (burstEnds[v].size() >= 4) {
                std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
                for (std::uint32_t q : recs) {
                    if (pieces.empty() || byDir.startNs[q] > pieces.back().second)
                        pieces.push_back({byDir.startNs[q], byDir.endNs(q)});
                    else pieces.back().second = std::max(pieces.back().second, byDir.endNs(q));
                }
                const std::vector<std::size_t> cuts = chooseCoarseCuts(pieces);
                if (!cuts.empty()) {
                    burstStarts[v].clear();
                    burstEnds[v].clear();
                    for (std::size_t c : cuts) {
                        burstEnds[v].push_back(pieces[c].second);
                        burstStarts[v].push_back({pieces[c + 1].first, double(pieces[c + 1].first - pieces[c].second)});
                    }
                    burstEnds[v].push_back(last);
                }
            }
        });
    }
    std::vector<std::vector<std::uint32_t>> forwardOut(n), forwardIn(n), ppAdj(n);
    std::vector<bool> forwardAB(pairs, true); // PP pair p: a→b is forward
    // Pairs whose ends have no DP bursts vote at the silences of the ends' records (byNode, built before).
    for (std::size_t p = 0; p < pairs; ++p)
        if (res.pairs[p].kind == PairKind::PP && burstEnds[pairEnds[p].first].empty() &&
            burstEnds[pairEnds[p].second].empty()) {
            buildByNode();
            break;
        }
    parallelFor(pairs, threads, [&](std::size_t p, unsigned) {
        PairInfo& pi = res.pairs[p];
        if (pi.kind != PairKind::PP) return;
        auto [x, y] = pairEnds[p];
        // Positions of the pair's records in both directions, by start; positions below `reverse` are a→b.
        const std::uint32_t forwardBegin = byDir.off[p * 2], reverse = byDir.off[p * 2 + 1],
                            reverseEnd = byDir.off[p * 2 + 2];
        std::vector<std::uint32_t> pairRecs;
        pairRecs.reserve(reverseEnd - forwardBegin);
        {
            std::uint32_t i = forwardBegin, j = reverse;
            while (i < reverse || j < reverseEnd)
                pairRecs.push_back(j >= reverseEnd || (i < reverse && byDir.startNs[i] <= byDir.startNs[j]) ? i++ : j++);
        }
        int votes = 0;
        double score = 0; // votes weighted by the silence before them
        auto vote = [&](std::int64_t t, double weight) {
            auto it = std::lower_bound(pairRecs.begin(), pairRecs.end(), t,
                                       [&](std::uint32_t q, std::int64_t v) { return byDir.startNs[q] < v; });
            if (it == pairRecs.end()) return;
            int sign = *it < reverse ? 1 : -1;
            votes += sign;
            score += sign * weight;
        };
        // The last of the pair's transfers before t: backward. Transfers both ways at once just before a sync are a
        // collective of the pipeline's own (a tied-embedding all-reduce between its first and last stage, which on
        // pp = 2 is this pair): passed over.
        auto voteBefore = [&](std::int64_t t, double weight) {
            auto it = std::lower_bound(pairRecs.begin(), pairRecs.end(), t,
                                       [&](std::uint32_t q, std::int64_t v) { return byDir.startNs[q] < v; });
            for (int back = 0; it != pairRecs.begin() && back < 65536; ++back) {
                --it;
                const bool ab = *it < reverse;
                const std::int64_t s0 = byDir.startNs[*it];
                // A record the other way starting within the tolerance of this one: both ways at once.
                auto other = std::lower_bound(pairRecs.begin(), pairRecs.end(), s0 - params.overlapToleranceNs,
                                              [&](std::uint32_t q, std::int64_t v) { return byDir.startNs[q] < v; });
                bool bothWays = false;
                for (; other != pairRecs.end() && byDir.startNs[*other] <= s0 + params.overlapToleranceNs; ++other)
                    bothWays = bothWays || (*other < reverse) != ab;
                if (bothWays) continue;
                const int sign = ab ? -1 : 1;
                votes += sign;
                score += sign * weight;
                return;
            }
        };
        // Weighed by the quiet before the burst: a step's sync follows the longest, where a later bucket of an
        // all-gather that overlaps the first forwards (a burst of its own) follows a short one and has activations
        // before it.
        if (!burstStarts[x].empty() || !burstStarts[y].empty()) {
            for (auto [t, quiet] : burstStarts[x]) voteBefore(t, quiet);
            for (auto [t, quiet] : burstStarts[y]) voteBefore(t, quiet);
        } else if (!burstEnds[x].empty() || !burstEnds[y].empty()) {
            for (std::int64_t t : burstEnds[x]) vote(t, 1.0);
            for (std::int64_t t : burstEnds[y]) vote(t, 1.0);
        } else {
            std::vector<std::uint32_t> act;
            std::merge(byNode.begin(x), byNode.end(x), byNode.begin(y), byNode.end(y), std::back_inserter(act));
            act.erase(std::unique(act.begin(), act.end()), act.end());
            for (std::uint32_t& k : act) k = records[k];
            auto gaps = silences([&](std::uint32_t r) { return flows.startNs[r]; },
                                 [&](std::uint32_t r) { return flows.end(r); }, act);
            double threshold = params.boundaryGapFactor * double(std::max<std::int64_t>(medianGap(gaps), 1));
            for (auto& [gap, t, before] : gaps)
                if (double(gap) > threshold) vote(t, double(gap));
        }
        if (score == 0 && !pairRecs.empty()) vote(byDir.startNs[pairRecs.front()], 1.0); // the first is forward
        pi.forwardVotes = votes;
        pi.forwardScore = score;
    });
    for (std::size_t p = 0; p < pairs; ++p) {
        const PairInfo& pi = res.pairs[p];
        if (pi.kind != PairKind::PP) continue;
        forwardAB[p] = pi.forwardScore >= 0;
        ppAdj[pairEnds[p].first].push_back(std::uint32_t(p));
        ppAdj[pairEnds[p].second].push_back(std::uint32_t(p));
    }

    bool hasDp = false;
    for (const PairInfo& pi : res.pairs) hasDp = hasDp || pi.kind == PairKind::DP;
    std::vector<std::pair<std::int64_t, std::int64_t>> jobPieces; // the job's activity, merged (no DP only)
    if (!hasDp) {
        for (std::uint32_t r : records) {
            if (jobPieces.empty() || flows.startNs[r] > jobPieces.back().second)
                jobPieces.push_back({flows.startNs[r], std::max(flows.startNs[r], flows.end(r))});
            else jobPieces.back().second = std::max(jobPieces.back().second, flows.end(r));
        }
    }
    // Without DP bursts, the step boundaries that orient the pipelines are where they drain (drains.h
    // scanDrains), which needs the orientation: the paths (pipelines) are taken all as voted, or all the
    // other way round, over all their pairs together (a transfer the exporter lost leaves one pair off its
    // count; the others still see the drain). Per way round:
    //   gaps: the median length of the drains' quiet gaps. Right, the gaps between steps (stage 0's last
    //         backward, the optimizer, its first forward); wrong, moments every pair is at its most loaded,
    //         shorter gaps inside steps.
    //   runs: the median over drains and head pairs of the transfers that run forward right after the drain
    //         plus those that run backward right before it. Right, the warm-up (stage 0 sends pp activations
    //         before the first gradient returns) and the cool-down, about 2 pp; wrong, the head is the last
    //         pair, which alternates: about 2. An order, not a time: a slow stage leaves it (pp >= 3; with
    //         pp = 2 both ways see runs of 1-2).
    struct Path {
        std::vector<std::pair<std::uint32_t, bool>> walk; // (pair, whether the walk enters it at its end a)
        bool along = true;                                // the walk goes forward, from stage 0
    };
    std::vector<Path> paths;
    std::vector<std::uint32_t> rings; // a node of each PP component that is a cycle
    // Walks a path from one end, or a ring from one node round to it: (pair, whether the walk enters it at its
    // end a) in walk order, and the sum of the pairs' forward scores taken along the walk.
    // A ring's closing pair, where its transfers say which (ringClosure): no chain link.
    std::vector<bool> closing(pairs, false);
    auto walkFrom = [&](std::uint32_t start) {
        std::vector<std::pair<std::uint32_t, bool>> walk;
        double sum = 0;
        for (std::uint32_t v = start, prev = kNone;;) {
            std::uint32_t next = kNone;
            for (std::uint32_t p : ppAdj[v]) {
                if (p == prev || closing[p]) continue;
                const bool fromA = pairEnds[p].first == v;
                walk.push_back({p, fromA});
                sum += fromA ? res.pairs[p].forwardScore : -res.pairs[p].forwardScore;
                next = fromA ? pairEnds[p].second : pairEnds[p].first;
                prev = p;
                break;
            }
            if (next == kNone || next == start) break;
            v = next;
        }
        return std::pair(std::move(walk), sum);
    };
    // The pair that closes a ring of PP pairs into a cycle carries fewer transfers than the chain's links: an
    // interleaved pipeline's last stage hands each micro-batch to stage 0 for the next model chunk (chunks - 1
    // times, where every chain link carries it `chunks` times each way), tied embeddings add an all-reduce a
    // step. Transfers (TransferJoin), not records. The pair with the fewest, under 0.9 times the median of the
    // others, or none.
    auto ringClosure = [&](const std::vector<std::uint32_t>& nodes) -> std::uint32_t {
        std::vector<std::pair<double, std::uint32_t>> counts;
        for (std::uint32_t v : nodes)
            for (std::uint32_t p : ppAdj[v]) {
                if (pairEnds[p].first != v) continue; // each pair once
                std::size_t transfers = 0;
                for (std::uint32_t dir = 0; dir < 2; ++dir) {
                    TransferJoin join;
                    for (std::uint32_t q = byDir.off[p * 2 + dir]; q < byDir.off[p * 2 + dir + 1]; ++q)
                        transfers += join.startsNew(byDir.startNs[q], std::max(byDir.startNs[q], byDir.endNs(q)));
                }
                counts.push_back({double(transfers), p});
            }
        if (counts.size() < 3) return kNone;
        std::sort(counts.begin(), counts.end());
        std::vector<double> others;
        for (std::size_t i = 1; i < counts.size(); ++i) others.push_back(counts[i].first);
        return counts[0].first < 0.9 * medianOf(std::move(others)) ? counts[0].second : kNone;
    };
    // The orientation compares the drains of both ways round with the head links alone forgiving a lost
    // gradient: deeper links one transfer deep between a gradient and an activation also occur inside a reversed
    // pipeline's steps (PP 13 without jitter read reversed with them).
    StepParams drainParams;
    drainParams.anyLinkLosesGradients = false;
    drainParams.twoStageTurns = false;
    constexpr double kDecisive = 1.5; // a gap median this many times the other decides; else the runs
    constexpr double kFewerSteps = 4;  // one way's step rhythm this many times finer: that way is wrong
    struct DrainEvidence {
        double runs = 0, gaps = 0;
        std::vector<std::size_t> drains; // gap indices of jobPieces
        std::vector<std::size_t> cuts;   // the drains the step rhythm keeps (choosePipelineCuts)
    };
    auto drainEvidence = [&](bool flipped) {
        std::vector<LinkRecord> recs;
        auto byStart = [](const LinkRecord& x, const LinkRecord& y) { return x.s < y.s; };
        std::uint32_t link = 0;
        for (const Path& path : paths) {
            const bool along = path.along != flipped;
            for (std::size_t i = 0; i < path.walk.size(); ++i, ++link) {
                const auto [p, fromA] = path.walk[i];
                const bool head = along ? i == 0 : i + 1 == path.walk.size();
                for (std::uint32_t dir = 0; dir < 2; ++dir) {
                    // Each direction's list is in start order already: merge it in.
                    const bool forward = ((dir == 0) == fromA) == along;
                    const std::size_t mid = recs.size();
                    for (std::uint32_t q = byDir.off[p * 2 + dir]; q < byDir.off[p * 2 + dir + 1]; ++q)
                        recs.push_back({byDir.startNs[q], std::max(byDir.startNs[q], byDir.endNs(q)), link,
                                        forward ? 1 : -1, head});
                    std::inplace_merge(recs.begin(), recs.begin() + std::ptrdiff_t(mid), recs.end(), byStart);
                }
            }
        }
        // Transfers on the head pairs (TransferJoin).
        std::vector<std::vector<std::pair<std::int64_t, int>>> heads(link); // per pair: (start, direction)
        std::vector<TransferJoin> joins(2 * std::size_t(link));
        for (const LinkRecord& r : recs)
            if (r.head && joins[2 * std::size_t(r.link) + (r.dir > 0 ? 1 : 0)].startsNew(r.s, r.e))
                heads[r.link].push_back({r.s, r.dir});
        DrainEvidence ev;
        const std::vector<double> share = scanDrains(jobPieces, recs, drainParams).share;
        std::vector<double> gaps, runs;
        for (std::size_t g = 0; g < share.size(); ++g) {
            const std::int64_t gap = jobPieces[g + 1].first - jobPieces[g].second;
            if (share[g] < drainParams.drainedShare || gap < drainParams.minBoundaryGapNs) continue;
            ev.drains.push_back(g);
            gaps.push_back(double(gap));
            for (const auto& head : heads) {
                if (head.empty()) continue;
                auto at = std::lower_bound(head.begin(), head.end(), std::pair{jobPieces[g + 1].first, -2});
                std::size_t run = 0;
                for (auto it = at; it != head.end() && it->second > 0; ++it) ++run;
                for (auto it = at; it != head.begin() && std::prev(it)->second < 0; --it) ++run;
                runs.push_back(double(run));
            }
        }
        ev.gaps = medianOf(std::move(gaps));
        ev.runs = medianOf(std::move(runs));
        ev.cuts = choosePipelineCuts(jobPieces, recs, drainParams);
        return ev;
    };

    // A pipeline is a path: its pairs all point the same way along it, so a path of PP pairs is oriented as
    // a whole, by the sum of its pairs' scores. One pair's own evidence can be wrong (a slow stage opens
    // long silences before its backward sends, dp = 1); its neighbours outvote it. Other shapes (branches,
    // cycles) keep the per-pair orientation.
    {
        std::vector<bool> done(n, false);
        std::vector<std::uint32_t> nodes, stack;
        for (std::size_t v0 = 0; v0 < n; ++v0) {
            if (done[v0] || ppAdj[v0].empty()) continue;
            nodes.clear();
            stack.assign(1, std::uint32_t(v0));
            done[v0] = true;
            std::size_t degreeSum = 0;
            bool path = true;
            while (!stack.empty()) {
                const std::uint32_t v = stack.back();
                stack.pop_back();
                nodes.push_back(v);
                degreeSum += ppAdj[v].size();
                if (ppAdj[v].size() > 2) path = false;
                for (std::uint32_t p : ppAdj[v]) {
                    const std::uint32_t w = pairEnds[p].first == v ? pairEnds[p].second : pairEnds[p].first;
                    if (!done[w]) done[w] = true, stack.push_back(w);
                }
            }
            if (path && degreeSum / 2 == nodes.size() && nodes.size() >= 3) {
                const std::uint32_t cut = ringClosure(nodes);
                if (cut == kNone) {
                    rings.push_back(nodes.front());
                    continue;
                }
                // A path from one end of the closing pair round to the other, oriented as paths are below.
                closing[cut] = true;
                auto [walk, sum] = walkFrom(pairEnds[cut].first);
                for (auto [p, fromA] : walk) forwardAB[p] = (sum >= 0) == fromA;
                paths.push_back({std::move(walk), sum >= 0});
                continue;
            }
            if (!path || degreeSum / 2 + 1 != nodes.size() || nodes.size() < 2) continue;
            std::uint32_t end = nodes.front();
            for (std::uint32_t v : nodes)
                if (ppAdj[v].size() == 1) end = v;
            // Walk from one end: (pair, whether the walk enters it at its end a); sum the scores along the walk.
            auto [walk, sum] = walkFrom(end);
            for (auto [p, fromA] : walk) forwardAB[p] = (sum >= 0) == fromA;
            paths.push_back({std::move(walk), sum >= 0});
        }
    }
    if (!hasDp && !paths.empty()) {
        // The silences above are the pipeline's own, and a slow stage opens long ones inside a step (before
        // its backward sends), time-symmetric enough to outvote the step's. The drains decide when they are
        // clear, by medians over the steps, so a few slow steps do not: the gaps first, when one median is
        // clearly longer (pp = 2 with balanced stages also drains for a moment inside a step, and both medians
        // are then those short gaps); else the step rhythm each way keeps among its drains, when one is four
        // times finer (the wrong way round, the most loaded moments come once a micro-batch in the steady
        // state; the right way, the drains the rhythm keeps are the steps, each of pp or more micro-batches,
        // where loss, skew or a slow stage left the drains' counts and gaps alike); else, with pp >= 3, the
        // count when one way has clearly fewer (the head links rest only between steps; the wrong way round,
        // many links rest between micro-batches, the gaps alike); else the runs (pp >= 3); else the votes stand.
        const DrainEvidence asVoted = drainEvidence(false), turned = drainEvidence(true);
        bool deep = false;
        for (const Path& path : paths) deep = deep || path.walk.size() >= 2;
        const double votedDrains = double(asVoted.drains.size()), turnedDrains = double(turned.drains.size());
        bool turn = false;
        const double votedCuts = double(asVoted.cuts.size()), turnedCuts = double(turned.cuts.size());
        if (turned.gaps > kDecisive * asVoted.gaps) turn = true;
        else if (asVoted.gaps > kDecisive * turned.gaps) turn = false;
        else if (turnedCuts >= 2 && votedCuts > kFewerSteps * turnedCuts) turn = true;
        else if (votedCuts >= 2 && turnedCuts > kFewerSteps * votedCuts) turn = false;
        else if (deep && turnedDrains > 0 && votedDrains > kDecisive * turnedDrains) turn = true;
        else if (deep && votedDrains > 0 && turnedDrains > kDecisive * votedDrains) turn = false;
        else if (deep && turned.runs > asVoted.runs) turn = true;
        for (Path& path : paths) path.along = path.along != turn;
        // Then each path on its own, at those step boundaries: the first transfer on a pair after the step's
        // quiet gap is an activation, forward (a path whose votes went the other way from the rest).
        // (At the step ends the rhythm keeps, not every drain: in a pipeline whose replicas run apart within their
        // hosts, half the head links rest at many gaps inside a step, where the first transfer tells nothing.)
        // Of those, the ones at least half as quiet as the quietest quarter: a step start whose first
        // activations run apart among replicas that share hosts is cut twice, the second time after some of
        // them were sent.
        std::vector<std::size_t> drains;
        {
            const std::vector<std::size_t>& cuts = turn ? turned.cuts : asVoted.cuts;
            auto gapAfter = [&](std::size_t g) { return jobPieces[g + 1].first - jobPieces[g].second; };
            std::vector<double> gaps;
            for (std::size_t g : cuts) gaps.push_back(double(gapAfter(g)));
            std::sort(gaps.begin(), gaps.end());
            const double quiet = gaps.empty() ? 0.0 : gaps[gaps.size() * 3 / 4];
            for (std::size_t g : cuts)
                if (2.0 * double(gapAfter(g)) >= quiet) drains.push_back(g);
        }
        for (Path& path : paths) {
            int votes = 0;
            for (std::size_t g : drains) {
                const std::int64_t t = jobPieces[g + 1].first;
                for (const auto& [p, fromA] : path.walk) {
                    // The first record at or after t in each direction of the pair.
                    std::int64_t first[2];
                    for (std::uint32_t dir = 0; dir < 2; ++dir) {
                        const auto b = byDir.startNs.begin() + byDir.off[p * 2 + dir];
                        const auto e = byDir.startNs.begin() + byDir.off[p * 2 + dir + 1];
                        const auto it = std::lower_bound(b, e, t);
                        first[dir] = it == e ? std::numeric_limits<std::int64_t>::max() : *it;
                    }
                    if (first[0] == first[1]) continue;
                    votes += ((first[0] < first[1]) == fromA) ? 1 : -1; // walk direction first
                }
            }
            if (votes != 0) path.along = votes > 0;
        }
        for (const Path& path : paths)
            for (auto [p, fromA] : path.walk) forwardAB[p] = path.along == fromA;
    }
    // Rings: interleaved pipelines (the last stage sends the next model chunk's activations to stage 0) and
    // tied embeddings on pp = 2 close the chain into a cycle. Oriented as a whole like a path, a ring is cut
    // where its step begins: stage 0 sends its first activation right after the step boundary (its own sync
    // end, or the ring's long silence without DP traffic), while every later link waits for the activation to
    // reach it — the link with the shortest median delay from the boundary to its first forward transfer
    // leaves stage 0, and the link into stage 0 is not a chain link.
    std::vector<bool> ringCut(pairs, false);
    bool ringsCut = false;
    for (std::uint32_t start : rings) {
        auto [walk, sum] = walkFrom(start);
        for (auto [p, fromA] : walk) forwardAB[p] = (sum >= 0) == fromA;
        // Step boundaries of the ring without DP bursts: its long silences.
        std::vector<std::int64_t> silencesEnd;
        if (!hasDp) {
            std::vector<std::uint32_t> recs; // positions in byDir of the ring's records, by start
            for (auto [p, fromA] : walk)
                for (std::uint32_t q = byDir.off[p * 2]; q < byDir.off[p * 2 + 2]; ++q) recs.push_back(q);
            std::sort(recs.begin(), recs.end(),
                      [&](std::uint32_t a, std::uint32_t b) { return byDir.startNs[a] < byDir.startNs[b]; });
            const std::vector<Silence> quiet = silences([&](std::uint32_t r) { return byDir.startNs[r]; },
                                                        [&](std::uint32_t r) { return byDir.endNs(r); }, recs);
            const double threshold = params.boundaryGapFactor * double(std::max<std::int64_t>(medianGap(quiet), 1));
            for (const Silence& q : quiet)
                if (double(q.gap) > threshold) silencesEnd.push_back(q.end);
        }
        std::size_t best = kNone;
        double bestDelay = std::numeric_limits<double>::max();
        for (std::size_t i = 0; i < walk.size(); ++i) {
            const std::uint32_t p = walk[i].first;
            const std::uint32_t from = forwardAB[p] ? pairEnds[p].first : pairEnds[p].second;
            const std::uint32_t dir = forwardAB[p] ? 0 : 1;
            const auto b = byDir.startNs.begin() + byDir.off[p * 2 + dir];
            const auto e = byDir.startNs.begin() + byDir.off[p * 2 + dir + 1];
            std::vector<double> delays;
            for (std::int64_t t : hasDp ? burstEnds[from] : silencesEnd) {
                const auto it = std::lower_bound(b, e, t);
                if (it != e) delays.push_back(double(*it - t));
            }
            if (delays.empty()) continue;
            std::nth_element(delays.begin(), delays.begin() + std::ptrdiff_t(delays.size() / 2), delays.end());
            const double d = delays[delays.size() / 2];
            if (d < bestDelay) bestDelay = d, best = i;
        }
        if (best == kNone) continue; // no boundary seen: the cycle stays (a note says so)
        // The link into the source of the first link: walk order is ring order, either way round.
        const std::uint32_t first = walk[best].first;
        const std::uint32_t stage0 = forwardAB[first] ? pairEnds[first].first : pairEnds[first].second;
        for (auto [p, fromA] : walk) {
            const std::uint32_t to = forwardAB[p] ? pairEnds[p].second : pairEnds[p].first;
            if (to == stage0) ringCut[p] = true;
        }
        ringsCut = true;
    }
    if (std::find(closing.begin(), closing.end(), true) != closing.end())
        res.notes.push_back("PP links form a ring (interleaved stages or tied embeddings between the last and the "
                            "first stage): the pair with the fewest transfers closes it (the last stage's hand-over "
                            "of the next model chunk, or the embedding all-reduce) and is not a chain link");
    if (ringsCut)
        res.notes.push_back("PP links form a ring (interleaved stages or tied embeddings between the last and the "
                            "first stage): each chain starts where each step's first activation is sent");
    for (std::size_t p = 0; p < pairs; ++p) {
        if (res.pairs[p].kind != PairKind::PP || ringCut[p] || closing[p]) continue;
        auto [x, y] = pairEnds[p];
        std::uint32_t from = forwardAB[p] ? x : y, to = forwardAB[p] ? y : x;
        forwardOut[from].push_back(to);
        forwardIn[to].push_back(from);
    }

    // Chains: DFS from every stage-0 candidate (PP out-degree > 0, in-degree 0) along forward edges.
    bool branching = false;
    for (std::size_t v = 0; v < n; ++v) {
        if (forwardOut[v].size() > 1 || forwardIn[v].size() > 1) branching = true;
        if (forwardOut[v].empty() || !forwardIn[v].empty()) continue;
        std::vector<EndpointId> chain;
        std::vector<bool> seen(n, false);
        std::uint32_t cur = std::uint32_t(v);
        while (!seen[cur]) {
            seen[cur] = true;
            chain.push_back(job.nics[cur]);
            if (forwardOut[cur].empty()) break;
            cur = forwardOut[cur].front();
        }
        res.ppChains.push_back(std::move(chain));
    }
    std::size_t ppPairs = 0;
    for (const auto& pi : res.pairs) ppPairs += pi.kind == PairKind::PP;
    if (branching) res.notes.push_back("the PP graph branches (a stage sends forward to more than one peer): "
                                       "pipeline chains are uncertain");
    if (ppPairs && res.ppChains.empty())
        res.notes.push_back("PP pairs form a cycle: no pipeline start (stage 0) could be found");

    // Sizes: most common DP group size and chain length.
    auto mode = [](const std::vector<std::size_t>& v) {
        std::map<std::size_t, int> count;
        for (std::size_t x : v) ++count[x];
        std::size_t best = 0;
        int bestCount = 0;
        for (auto [k, c] : count)
            if (c > bestCount) best = k, bestCount = c;
        return std::pair<std::size_t, bool>(best, count.size() <= 1);
    };
    std::vector<std::size_t> groupSizes, chainLengths;
    for (std::size_t g = 0; g < res.dpGroups.size(); ++g)
        groupSizes.push_back(res.dpGroups[g].size() + res.quietMembers[g].size());
    for (const auto& ch : res.ppChains) chainLengths.push_back(ch.size());
    auto [dp, dpUniform] = mode(groupSizes);
    res.dp = int(std::max<std::size_t>(dp, 1));
    if (!dpUniform) res.notes.push_back("DP groups have different sizes; DP is the most common size");
    if (res.ppChains.empty())
        res.pp = 1;
    else {
        auto [pp, ppUniform] = mode(chainLengths);
        res.pp = int(pp);
        if (!ppUniform) res.notes.push_back("pipeline chains have different lengths; PP is the most common length");
    }

    // GPUs and TP.
    std::map<int, int> gpusPerHost;
    for (EndpointId e : job.nics) {
        auto nic = topology.nicByIp(flows.endpoints.at(e));
        const int gpus = topology.gpusBehind(flows.endpoints.at(e));
        res.gpus += gpus;
        gpusPerHost[nic ? topology.nics[*nic].host : -1 - int(e)] += gpus;
    }
    for (const auto& quiet : res.quietMembers)
        for (const IpAddr& ip : quiet) {
            const int gpus = topology.gpusBehind(ip);
            res.gpus += gpus;
            gpusPerHost[topology.nics[std::size_t(*topology.nicByIp(ip))].host] += gpus;
        }
    const int shards = res.dp * res.pp;
    if (shards > 0 && res.gpus % shards == 0)
        res.tp = res.gpus / shards;
    else {
        res.tp = std::max(1, res.gpus / std::max(shards, 1));
        res.notes.push_back("the job's " + std::to_string(res.gpus) + " GPUs do not divide into DP " +
                            std::to_string(res.dp) + " x PP " + std::to_string(res.pp) + ": TP is a guess");
    }
    int perHost = 0;
    bool uniformHosts = true;
    for (auto [h, c] : gpusPerHost) {
        if (perHost && c != perHost) uniformHosts = false;
        perHost = c;
    }
    // (DP rings through NVLink put DP peers on one host: then TP divides the GPUs per host, and that is said.)
    if (uniformHosts && perHost && res.tp != perHost && !(ringsThroughHosts && perHost % res.tp == 0))
        res.notes.push_back("TP " + std::to_string(res.tp) + " differs from the " + std::to_string(perHost) +
                            " GPUs the job uses per host");
    if (res.tp > 1)
        res.notes.push_back("traffic inside a host never reaches the network: intra-host parallelism is reported "
                            "as TP (" + std::to_string(res.tp) + ")");
    // GPUs that share a NIC share its traffic: the network cannot tell TP ranks behind a NIC from DP (or
    // pipeline) ranks, nor whether the job uses all of them. Say what the other readings would be.
    int shared = 0;
    for (EndpointId e : job.nics) shared = std::max(shared, topology.gpusBehind(flows.endpoints.at(e)));
    if (shared > 1 && res.tp % shared == 0)
        res.notes.push_back(std::to_string(shared) + " GPUs share each NIC: TP " + std::to_string(res.tp) +
                            " counts them all; other readings the flows cannot rule out: TP " +
                            std::to_string(res.tp / shared) + " x DP " + std::to_string(res.dp * shared) +
                            " (DP ranks behind one NIC), or TP " + std::to_string(res.tp / shared) +
                            " on one GPU of each NIC");
    return res;
}

} // namespace prism
