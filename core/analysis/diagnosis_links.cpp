#include "analysis/diagnosis_internal.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

namespace prism::diag {

// ---- slow links --------------------------------------------------------------------------------------------

namespace {

constexpr EndpointId kAnyPeer = std::numeric_limits<EndpointId>::max();

// Congestion evidence where the source has it (packet captures): retransmissions, CNPs and ECN-CE marks of the
// slow NIC's records, sent or received (with `peer`: only those between the two), in the finding's steps, as
// evidence and in the message — what a network engineer checks first (PFC/ECN settings, a flapping link).
void addCongestion(const FlowTable& flows, const RecognizedJob& job, const StepDivision& sd, int first, int last,
                   EndpointId nic, EndpointId peer, Finding& f) {
    if (!flows.hasCongestion() || sd.steps.empty()) return;
    const std::int64_t from = sd.steps[std::size_t(first)].startNs, to = sd.steps[std::size_t(last)].endNs;
    std::uint64_t retransmits = 0, cnps = 0, ce = 0, records = 0;
    for (std::uint32_t r : job.records) {
        if (flows.startNs[r] < from || flows.startNs[r] > to) continue;
        const EndpointId s = flows.src[r], d = flows.dst[r];
        const bool mine =
            peer == kAnyPeer ? (s == nic || d == nic) : ((s == nic && d == peer) || (s == peer && d == nic));
        if (!mine) continue;
        ++records;
        retransmits += flows.retransmits[r];
        cnps += flows.cnps[r];
        ce += flows.ecnCe[r];
    }
    f.evidence.push_back({"retransmits", double(retransmits)});
    f.evidence.push_back({"cnps", double(cnps)});
    f.evidence.push_back({"ecn_ce", double(ce)});
    if (retransmits || cnps || ce)
        f.message += "; congestion seen: " + std::to_string(retransmits) + " retransmitted packets, " +
                     std::to_string(cnps) + " CNPs, " + std::to_string(ce) + " ECN-CE marks over " +
                     std::to_string(records) + " records";
    else
        f.message += "; no retransmission, CNP or ECN-CE mark in its packets (not congestion: a slow link or NIC)";
}

bool overlaps(const Finding& a, const Finding& b) { return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep; }

} // namespace

std::vector<Finding> slowLinks(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                               const JobIndex& ix, const StepDivision& sd, const DiagnosisParams& p) {
    std::vector<Finding> out;
    const std::size_t K = sd.steps.size(), n = ix.size();
    if (K == 0 || n == 0) return out;
    std::vector<std::int64_t> ends(K);
    for (std::size_t k = 0; k < K; ++k) ends[k] = sd.steps[k].endNs;
    // The first step ending at or after s (K: none, or s before the first step), near the last one asked for.
    std::size_t near = 0;
    auto stepOf = [&](std::int64_t s) {
        if (s < sd.steps.front().startNs) return K;
        return near = lowerBoundNear(ends, s, near);
    };
    // Transfers: an exporter splits a long transfer into records at its active timeout, so a slow transfer
    // gives more, smaller records than a fast one of the same size. Records that continue each other on one
    // channel (same sender, receiver and source port, touching in time) are merged back first.
    struct Xfer {
        std::int64_t s, e;
        std::uint64_t bytes;
        std::int32_t a, b;
        std::uint16_t port;
        std::int8_t slow = -1; // -1: no reference speed for its size in its step; 0 / 1
    };
    // Everything below is judged step by step, so the transfers are held one step at a time, not the job's all
    // at once (40 bytes a record: the largest allocation of the analysis): a step is judged and its transfers
    // dropped as soon as no later record can start a transfer in it or extend one of its transfers. The last
    // list holds the transfers outside every step (before the first, after the last), never judged.
    std::vector<std::vector<Xfer>> xfersOfStep(K + 1);
    std::size_t usualXfers = 0; // the most transfers a step judged so far had
    // Per sender: its latest transfer per channel, with what merging needs (the transfer may be judged
    // and dropped by then: it is closed, e + 2 us before the record at hand).
    struct Open {
        std::int64_t e;
        std::uint64_t channel; // receiver and source port, one word (channelOf)
        std::uint32_t step, i;
    };
    auto channelOf = [](std::int32_t b, std::uint16_t port) { return std::uint64_t(std::uint32_t(b)) << 16 | port; };
    std::vector<std::vector<Open>> open(n);
    constexpr std::int64_t kTouch = 2'000; // a record starting within this of a transfer's end continues it
    std::int64_t maxOffset = std::numeric_limits<std::int64_t>::min();
    for (std::size_t x = 0; x < n; ++x) maxOffset = std::max(maxOffset, sd.offsetOf(ix.endpoint(int(x))));
    // Records come by start (the table is sorted): then a step is complete once the records have moved past it.
    const bool byStart = p.judgeStepByStep && recordsByStart(flows, job);

    // Reference throughput per (kind, size class) in a step: the median of the job's transfers.
    constexpr std::size_t kClasses = 65;
    auto bucketOf = [&](const Xfer& x) {
        const std::size_t cls = std::size_t(64 - __builtin_clzll(x.bytes));
        return std::size_t(ix.kind(x.a, x.b) == PairKind::DP ? 1 : 0) * kClasses + cls;
    };
    auto throughput = [](const Xfer& x) { return double(x.bytes) / double(x.e - x.s); };
    // Per (NIC, step): transfers, slow transfers, their bytes, time and time at the reference speed.
    struct Tally {
        std::uint32_t total = 0, slow = 0;
        double bytes = 0, ns = 0, refNs = 0;
        double wallNs = 0; // the time its slow transfers took, overlapping channels counted once
    };
    std::vector<Tally> tally(n * K);
    std::unordered_map<std::uint64_t, std::uint32_t> slowPairs; // (step, a, b) -> slow transfers, this step's
    auto pairKey = [](std::size_t k, int a, int b) {
        return (std::uint64_t(k) << 40) | (std::uint64_t(std::min(a, b)) << 20) | std::uint64_t(std::max(a, b));
    };
    // A NIC is a candidate in a step when (nearly) all its transfers are slow. Per step and candidate: how many
    // of its slow peers are not candidates (healthy NICs that are slow only with it).
    auto isCandidate = [&](std::size_t k, std::size_t x) {
        const Tally& t = tally[x * K + k];
        return t.total >= p.minNicRecords && double(t.slow) >= p.slowNicShare * double(t.total);
    };
    std::unordered_map<std::uint64_t, std::uint32_t> healthyPeers; // (step, nic) -> peers, this step's
    auto healthyPeersOf = [&](std::size_t k, int x) {
        auto it = healthyPeers.find((std::uint64_t(k) << 20) | std::uint64_t(x));
        return it == healthyPeers.end() ? 0u : it->second;
    };

    // The member of a component that every slow pair among its members touches, or -1 (a ring has none).
    auto hubOf = [&](std::size_t k, const std::vector<int>& members) {
        std::vector<int> touches(members.size(), 0);
        int pairs = 0;
        for (std::size_t i = 0; i < members.size(); ++i)
            for (std::size_t j = i + 1; j < members.size(); ++j)
                if (slowPairs.count(pairKey(k, members[i], members[j]))) ++pairs, ++touches[i], ++touches[j];
        int hub = -1;
        for (std::size_t i = 0; i < members.size(); ++i)
            if (pairs >= 2 && touches[i] == pairs) hub = members[i];
        return hub;
    };

    // Per step: NICs with (nearly) all records slow, joined by slow pairs into components. A component of one
    // is the slow NIC; of two, a slow pair; larger (a synchronous ring slows all its members alike), the member
    // whose hops are slowest.
    std::map<std::string, std::vector<int>> stepsOfPlace;
    // Per member, the hops among a set of NICs in a step: bytes and time moved, its fastest hop, the sides it
    // was seen on, and how many of the hops were judged and found slow.
    struct Hops {
        double bytes = 0, ns = 0, fastest = 0;
        int sides = 0; // 1 sends, 2 receives, 3 both
    };
    struct HopsAmong {
        std::map<int, Hops> of;
        std::size_t judged = 0, slow = 0;
    };
    auto hopsAmong = [&](std::size_t k, auto isMember) {
        HopsAmong h;
        for (const Xfer& x : xfersOfStep[k]) {
            if (!isMember(x.a) || !isMember(x.b)) continue;
            if (x.slow >= 0) {
                ++h.judged;
                h.slow += std::size_t(x.slow);
            }
            for (int v : {x.a, x.b}) {
                Hops& m = h.of[v];
                m.bytes += double(x.bytes);
                m.ns += double(x.e - x.s);
                m.fastest = std::max(m.fastest, throughput(x));
                m.sides |= v == x.a ? 1 : 2;
            }
        }
        return h;
    };

    // DP groups: a synchronous ring moves at its slowest hop's pace.
    std::map<int, std::size_t> ringSize;
    for (std::size_t x = 0; x < n; ++x)
        if (ix.dpGroup(int(x)) >= 0) ++ringSize[ix.dpGroup(int(x))];

    // The candidates of step k, placed: a slow NIC, a slow pair, or a ring's slow member.
    auto judgeCandidates = [&](std::size_t k) {
        std::vector<int> cand;
        for (std::size_t x = 0; x < n; ++x)
            if (isCandidate(k, x)) cand.push_back(int(x));
        if (cand.empty()) return;
        // A ring paced by one slow hop: its members look slow next to the other rings, and with one channel per
        // transfer lost records leave holes that split them into several components (each once reported as a
        // slow NIC, with a slow switch on top), or keep the slow NIC itself from being a candidate. When most of
        // a ring's transfers in the step are slow and one of its members is a candidate, the ring is placed by
        // throughput (robust to lost records: what remains of a transfer moved at its rate): a slow NIC is an
        // end of the ring's two slowest hops, so even its fastest hop is slow, while a neighbour's other hop
        // runs at the ring's pace (3 % faster with a 2x slow NIC, 7 % with 8x). Reported: the candidates whose
        // fastest hop is within 1.5 % of the slowest member's, both of their hops seen (two slow NICs in one
        // ring are both that slow; a neighbour whose other hop was lost would look as slow), or else the
        // slowest member.
        std::map<int, std::vector<int>> candOfRing;
        for (int x : cand)
            if (ix.dpGroup(x) >= 0) candOfRing[ix.dpGroup(x)].push_back(x);
        std::set<int> placed;
        for (const auto& [g, cs] : candOfRing) {
            if (ringSize[g] < 3) continue;
            const int ring = g; // clang before 16 cannot capture a structured binding
            const HopsAmong h = hopsAmong(k, [&](int v) { return ix.dpGroup(v) == ring; });
            if (h.judged == 0 || 2 * h.slow < h.judged) continue;
            int slowest = -1;
            double minRate = std::numeric_limits<double>::infinity();
            for (const auto& [x, m] : h.of)
                if (m.sides == 3 && m.fastest < minRate) {
                    minRate = m.fastest;
                    slowest = x;
                }
            if (slowest < 0) continue;
            std::vector<int> places;
            for (int x : cs) // both of its hops seen: a neighbour whose other hop was lost looks as slow
                if (auto it = h.of.find(x); it != h.of.end() && it->second.sides == 3 &&
                                            it->second.fastest <= minRate * 1.015)
                    places.push_back(x);
            if (places.empty()) places.push_back(slowest);
            for (int x : places) stepsOfPlace[std::to_string(x)].push_back(int(k));
            placed.insert(cs.begin(), cs.end());
            placed.insert(places.begin(), places.end());
        }
        if (!placed.empty()) {
            // A candidate of another ring that is slow with a placed NIC (its pipeline neighbour) is explained.
            auto explained = [&](int x) {
                if (placed.count(x)) return true;
                for (int y : placed)
                    if (slowPairs.count(pairKey(k, x, y))) return true;
                return false;
            };
            std::erase_if(cand, explained);
        }
        if (cand.empty()) return;
        std::vector<int> parent(n);
        std::iota(parent.begin(), parent.end(), 0);
        auto find = [&](int x) {
            while (parent[std::size_t(x)] != x)
                x = parent[std::size_t(x)] = parent[std::size_t(parent[std::size_t(x)])];
            return x;
        };
        std::vector<std::uint8_t> isCand(n, 0);
        for (int x : cand) isCand[std::size_t(x)] = 1;
        for (std::size_t i = 0; i < cand.size(); ++i)
            for (std::size_t j = i + 1; j < cand.size(); ++j)
                if (slowPairs.count(pairKey(k, cand[i], cand[j]))) parent[std::size_t(find(cand[i]))] = find(cand[j]);
        std::map<int, std::vector<int>> comps;
        for (int x : cand) comps[find(x)].push_back(x);
        auto share = [&](int x) {
            const Tally& t = tally[std::size_t(x) * K + k];
            return double(t.slow) / double(t.total);
        };
        for (auto& [root, members] : comps) {
            std::string place;
            // The NIC all of whose transfers are slow, when its slow partners also carry normal ones; a NIC slow
            // with everyone, including a peer that is healthy otherwise, is slow itself.
            std::sort(members.begin(), members.end(), [&](int x, int y) { return share(x) > share(y); });
            std::vector<int> alone;
            for (int x : members)
                if (share(x) >= 0.95 && healthyPeersOf(k, x) >= 1) alone.push_back(x);
            if (members.size() > 1 && alone.size() >= 2) {
                for (int x : alone) stepsOfPlace[std::to_string(x)].push_back(int(k));
                continue;
            }
            if (members.size() == 1 || share(members[0]) >= share(members[1]) + 0.1) {
                place = std::to_string(members[0]);
            } else if (members.size() == 2) {
                place = std::to_string(members[0]) + ">" + std::to_string(members[1]);
            } else if (int hub = hubOf(k, members); hub >= 0) {
                // Every slow pair of the component touches one member (a middle stage whose neighbours have no
                // other peer, pp = 3): that member is slow.
                place = std::to_string(hub);
            } else {
                // A synchronous ring moves at its slowest hop's pace, so every member looks slow next to the
                // other rings; the slow NIC is an end of the two slowest hops. The member whose transfers in
                // the component move the fewest bytes per second: robust to lost records (what remains of a
                // transfer still moved at its rate), where their end times are not (a lost last piece ends a
                // transfer early, a lost middle piece splits it).
                const std::set<int> in(members.begin(), members.end());
                const HopsAmong h = hopsAmong(k, [&](int v) { return in.count(v) > 0; });
                if (h.of.empty()) continue;
                int best = members[0];
                double bestRate = std::numeric_limits<double>::infinity();
                for (const auto& [x, m] : h.of)
                    if (m.ns > 0 && m.bytes / m.ns < bestRate) {
                        bestRate = m.bytes / m.ns;
                        best = x;
                    }
                place = std::to_string(best);
            }
            stepsOfPlace[place].push_back(int(k));
        }
    };

    // Judges step k from its transfers, then drops them.
    auto judgeStep = [&](std::size_t k) {
        std::vector<Xfer>& xs = xfersOfStep[k];
        usualXfers = std::max(usualXfers, xs.size());
        std::vector<std::vector<float>> samples(2 * kClasses);
        for (const Xfer& x : xs) samples[bucketOf(x)].push_back(float(throughput(x)));
        std::vector<double> ref(samples.size(), 0.0), refSigma(samples.size(), 0.0);
        for (std::size_t i = 0; i < samples.size(); ++i) {
            const auto& v = samples[i];
            if (v.size() >= 8) { // fewer transfers of that size: not enough to know what is normal
                const RobustStats st = robustStats(std::vector<double>(v.begin(), v.end()));
                ref[i] = st.median;
                refSigma[i] = std::max(st.sigma, p.minSigmaShare * st.median);
            }
        }
        slowPairs.clear();
        healthyPeers.clear();
        for (Xfer& x : xs) {
            const std::size_t bucket = bucketOf(x);
            const double rf = ref[bucket];
            if (rf <= 0) continue;
            const double tp = throughput(x);
            const bool slow = tp * p.minLinkSlowdown <= rf && rf - tp >= p.kSigma * refSigma[bucket];
            x.slow = std::int8_t(slow);
            for (int v : {x.a, x.b}) {
                Tally& t = tally[std::size_t(v) * K + k];
                ++t.total;
                if (!slow) continue;
                ++t.slow;
                t.bytes += double(x.bytes);
                t.ns += double(x.bytes) / tp;
                t.refNs += double(x.bytes) / rf;
            }
            if (slow) ++slowPairs[pairKey(k, x.a, x.b)];
        }
        // Per NIC, the union of its slow transfers' times: what its slowness can cost the step.
        std::vector<std::tuple<int, std::int64_t, std::int64_t>> slowSpans;
        for (const Xfer& x : xs)
            if (x.slow == 1)
                for (int v : {x.a, x.b}) slowSpans.emplace_back(v, x.s, x.e);
        std::sort(slowSpans.begin(), slowSpans.end());
        for (std::size_t i = 0; i < slowSpans.size();) {
            const int v = std::get<0>(slowSpans[i]);
            std::int64_t s0 = std::get<1>(slowSpans[i]), e0 = std::get<2>(slowSpans[i]);
            double wall = 0;
            for (; i < slowSpans.size() && std::get<0>(slowSpans[i]) == v; ++i) {
                if (std::get<1>(slowSpans[i]) > e0) {
                    wall += double(e0 - s0);
                    s0 = std::get<1>(slowSpans[i]);
                }
                e0 = std::max(e0, std::get<2>(slowSpans[i]));
            }
            tally[std::size_t(v) * K + k].wallNs = wall + double(e0 - s0);
        }
        for (const auto& [key, count] : slowPairs) {
            const std::uint64_t a = (key >> 20) & 0xFFFFF, b = key & 0xFFFFF;
            const bool ca = isCandidate(k, a), cb = isCandidate(k, b);
            if (ca && !cb) ++healthyPeers[(std::uint64_t(k) << 20) | a];
            if (cb && !ca) ++healthyPeers[(std::uint64_t(k) << 20) | b];
        }
        judgeCandidates(k);
        std::vector<Xfer>().swap(xs);
    };

    // The records in order, merged into transfers; each step judged once the records have moved past it.
    std::size_t judged = 0; // steps judged so far
    // The next step's transfers still open when the records first moved past it (sender, place in its list):
    // the only ones that can hold it back, since no later record starts a transfer in it. Looked at again only
    // once the latest of them could have closed.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> holding;
    bool scanned = false;               // `holding` is the next step's
    std::int64_t recheckAt = INT64_MIN; // when a step held back is worth another look
    auto ready = [&](std::size_t k, std::int64_t now) {
        // No later record starts in step k or before (its start less the largest clock offset is past the
        // step's end), and every transfer of the step is closed (later records start more than 2 us after it).
        if (now - maxOffset <= ends[k]) return false;
        if (!scanned) {
            holding.clear();
            for (std::uint32_t a = 0; a < open.size(); ++a)
                for (std::uint32_t i = 0; i < open[a].size(); ++i)
                    if (open[a][i].step == k && now <= open[a][i].e + kTouch) holding.emplace_back(a, i);
            scanned = true;
        } else if (now < recheckAt) {
            return false;
        }
        // A place taken by a later transfer (of a later step) holds the step no more.
        std::erase_if(holding, [&](const auto& at) {
            const Open& o = open[at.first][at.second];
            return o.step != k || now > o.e + kTouch;
        });
        if (holding.empty()) {
            scanned = false;
            return true;
        }
        recheckAt = INT64_MIN;
        for (const auto& [a, i] : holding) recheckAt = std::max(recheckAt, open[a][i].e + kTouch + 1);
        return false;
    };
    for (std::uint32_t r : job.records) {
        const std::int64_t s = flows.startNs[r], e = std::max(flows.end(r), flows.startNs[r] + 1);
        while (byStart && judged < K && ready(judged, s)) judgeStep(judged++);
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || b < 0 || flows.bytes[r] == 0) continue;
        const std::uint64_t channel = channelOf(b, flows.srcPort[r]);
        auto start = [&]() __attribute__((always_inline)) { // a new transfer from this record
            const std::uint32_t step = std::uint32_t(stepOf(s - sd.offsetOf(ix.endpoint(a))));
            std::vector<Xfer>& to = xfersOfStep[step];
            if (to.capacity() == 0) to.reserve(usualXfers); // a step's list sized as the largest judged yet
            to.push_back({s, e, flows.bytes[r], a, b, flows.srcPort[r]});
            return Open{e, channel, step, std::uint32_t(to.size() - 1)};
        };
        bool merged = false;
        for (Open& o : open[std::size_t(a)]) {
            if (o.channel != channel) continue;
            if (s <= o.e + kTouch) {
                Xfer& x = xfersOfStep[o.step][o.i];
                x.e = std::max(x.e, e);
                x.bytes += flows.bytes[r];
                o.e = x.e;
            } else {
                o = start();
            }
            merged = true;
            break;
        }
        if (!merged) open[std::size_t(a)].push_back(start());
    }
    while (judged < K) judgeStep(judged++);
    std::vector<std::vector<Open>>().swap(open);
    std::vector<std::vector<Xfer>>().swap(xfersOfStep);
    for (auto& [place, steps] : stepsOfPlace) {
        std::sort(steps.begin(), steps.end());
        steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
        std::vector<int> nics;
        if (auto gt = place.find('>'); gt != std::string::npos)
            nics = {std::stoi(place.substr(0, gt)), std::stoi(place.substr(gt + 1))};
        else
            nics = {std::stoi(place)};
        for (const Episode& e : episodesOf(steps, p.maxEpisodeGap)) {
            Tally sum;
            double saved = 0; // at its peers' speed its slow transfers take refNs / ns of their time
            for (int k = e.first; k <= e.last; ++k) {
                double most = 0;
                for (int x : nics) {
                    const Tally& t = tally[std::size_t(x) * K + std::size_t(k)];
                    sum.total += t.total;
                    sum.slow += t.slow;
                    sum.bytes += t.bytes;
                    sum.ns += t.ns;
                    sum.refNs += t.refNs;
                    if (t.ns > 0) most = std::max(most, t.wallNs * (1.0 - t.refNs / t.ns));
                }
                saved += most;
            }
            Finding f;
            f.kind = "slow_link";
            const EndpointId e0 = ix.endpoint(nics[0]);
            auto nicText = [&](EndpointId ep) {
                return topology.rankLabel(flows.endpoints.at(ep)) + " (" + flows.endpoints.at(ep).toString() + ")";
            };
            std::string where;
            if (nics.size() == 1) {
                f.ip = flows.endpoints.at(e0).toString();
                if (auto nic = topology.nicByIp(flows.endpoints.at(e0)))
                    f.switchName = topology.nics[std::size_t(*nic)].switchName;
                where = "NIC " + nicText(e0) + (f.switchName.empty() ? "" : " on " + f.switchName);
            } else {
                const EndpointId e1 = ix.endpoint(nics[1]);
                f.srcIp = flows.endpoints.at(e0).toString();
                f.dstIp = flows.endpoints.at(e1).toString();
                where = "the link between " + nicText(e0) + " and " + nicText(e1);
            }
            f.firstStep = sd.steps[std::size_t(e.first)].index;
            f.lastStep = sd.steps[std::size_t(e.last)].index;
            const double slowdown = sum.refNs > 0 ? sum.ns / sum.refNs : 1.0;
            const double gbps = sum.ns > 0 ? sum.bytes * 8 / sum.ns : 0.0;
            const double refGbps = sum.refNs > 0 ? sum.bytes * 8 / sum.refNs : 0.0;
            f.score = slowdown;
            f.message = "slow link: " + where + " moves data " + num(slowdown, 1) + "× slower than its peers (" +
                        num(gbps, 1) + " vs " + num(refGbps, 1) + " Gb/s for the same transfer sizes) in " +
                        stepRange(f.firstStep, f.lastStep);
            f.evidence = {{"slowdown", slowdown},
                          {"throughput_gbps", gbps},
                          {"peer_throughput_gbps", refGbps},
                          {"slow_records_share", sum.total ? double(sum.slow) / double(sum.total) : 0.0},
                          {"steps", double(e.last - e.first + 1)}};
            f.savesMsPerStep = saved / double(e.last - e.first + 1) / 1e6; // capped by the step's excess later
            addCongestion(flows, job, sd, e.first, e.last, e0, nics.size() == 1 ? kAnyPeer : ix.endpoint(nics[1]), f);
            out.push_back(std::move(f));
        }
    }
    return out;
}

// ---- slow switches -----------------------------------------------------------------------------------------

std::vector<Finding> slowSwitches(const std::vector<Finding>& links) {
    std::map<std::string, std::vector<const Finding*>> byLeaf;
    for (const Finding& f : links)
        if (!f.ip.empty() && !f.switchName.empty()) byLeaf[f.switchName].push_back(&f);
    std::vector<Finding> out;
    for (const auto& [leaf, list] : byLeaf) {
        // Slow NICs of this leaf whose episodes overlap another slow NIC's.
        std::set<std::string> nics;
        int first = std::numeric_limits<int>::max(), last = std::numeric_limits<int>::min();
        std::vector<double> slowdowns;
        for (const Finding* a : list)
            for (const Finding* b : list)
                if (a != b && a->ip != b->ip && overlaps(*a, *b)) {
                    nics.insert(a->ip);
                    first = std::min(first, std::max(a->firstStep, b->firstStep));
                    last = std::max(last, std::min(a->lastStep, b->lastStep));
                    slowdowns.push_back(a->score);
                }
        if (nics.size() < 2) continue;
        Finding f;
        f.kind = "slow_switch";
        f.switchName = leaf;
        f.firstStep = first;
        f.lastStep = last;
        f.score = medianOf(slowdowns);
        f.message = "slow switch: " + std::to_string(nics.size()) + " NICs behind " + leaf + " are slow together (" +
                    num(f.score, 1) + "× their peers' transfer time) in " + stepRange(first, last) +
                    "; suspect the switch or its uplinks rather than one cable";
        f.evidence = {{"slow_nics", double(nics.size())}, {"slowdown", f.score}, {"steps", double(last - first + 1)}};
        out.push_back(std::move(f));
    }
    return out;
}

} // namespace prism::diag
