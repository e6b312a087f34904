#include "analysis/diagnosis.h"

#include "analysis/job_index.h"
#include "analysis/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

namespace prism {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Episode {
    int first, last;
};

// Runs of flagged steps (ascending, unique), joining runs at most maxGap steps apart.
std::vector<Episode> episodesOf(const std::vector<int>& steps, int maxGap) {
    std::vector<Episode> out;
    for (int s : steps) {
        if (!out.empty() && s - out.back().last <= maxGap + 1) out.back().last = s;
        else out.push_back({s, s});
    }
    return out;
}

std::string num(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string ms(double ns) { return num(ns / 1e6, ns < 1e7 ? 2 : 1) + " ms"; }

std::string stepRange(int a, int b) {
    return a == b ? "step " + std::to_string(a) : "steps " + std::to_string(a) + "–" + std::to_string(b);
}

double ratioOf(const RobustStats& st, double v) { return st.median > 0 ? v / st.median : kNaN; }

// Robust z with a sigma floor (a perfectly steady series has MAD 0: everything would be an outlier).
double zOf(const RobustStats& st, double v, double floorShare) {
    const double sigma = std::max(st.sigma, floorShare * std::fabs(st.median));
    return sigma > 0 ? (v - st.median) / sigma : 0.0;
}

bool overlaps(const Finding& a, const Finding& b) { return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep; }

int kindOrder(const std::string& k) {
    if (k == "slow_stage") return -1;
    if (k == "slow_step" || k == "periodic_stall") return 0;
    if (k == "slow_rank") return 1;
    if (k == "slow_link") return 2;
    return 3;
}

// ---- slow ranks ------------------------------------------------------------------------------------------

// Expert-parallel all-to-all (mixture of experts): the members of an EP group meet at every dispatch and
// combine, each posting its sends to all the others at once when it gets there, and the group computes on in
// lockstep. A slow GPU gets there last, every time: its sends start after its peers' by the extra time of the
// compute before them, and the peers wait for it. Per rank and step, its lateness: the median over the step's
// exchanges of its exchange's start less the earliest member's, as a share of the usual interval between
// exchanges, and in ns (NaN where not measured). Only a rank late by kStandOut times its group's other
// members' median stands out; the others get share 0. An EP group is a component of the DP pairs that carry
// traffic both ways (a ring collective's hops go one way); groups of three or more only, and an exchange is a
// rank's sends that start within exchangeWindowNs of each other to at least two peers and half the others of
// its group: a collective's hop waits for the hop before it (a slow link would make its receiver look late;
// a tree's inner node sends to its children and parent, a few of the group), an expert exchange does not.
// The group's members must show the same number of exchanges in the step, else the step is not judged.
struct Lateness {
    std::vector<double> share, ns; // per rank x step
};
Lateness expertLateness(const FlowTable& flows, const JobIndex& ix, const RecognizedJob& job, const StepDivision& sd,
                        const JobTimeline& tl, const DiagnosisParams& p) {
    constexpr double kStandOut = 4.0;
    const std::size_t R = tl.ranks.size(), K = sd.steps.size(), n = ix.size();
    Lateness out{std::vector<double>(R * K, kNaN), std::vector<double>(R * K, kNaN)};
    if (K == 0 || n == 0) return out;
    auto dpPair = [&](int a, int b) {
        return a >= 0 && b >= 0 && ix.dpGroup(a) >= 0 && ix.dpGroup(a) == ix.dpGroup(b) &&
               ix.kind(a, b) == PairKind::DP;
    };
    const std::vector<int> block = expertGroups(flows, job, ix);
    auto find = [&](int x) { return block[std::size_t(x)]; };
    // Where the step division told the ring's hops from the exchanges (sd.isExchange), an exchange is any
    // send to an EP peer outside the ring's sync: EP groups of two are judged too.
    const bool told = !sd.expertPairs.empty();
    std::map<int, std::vector<int>> members; // EP groups of three or more (two when told)
    for (std::size_t l = 0; l < n; ++l)
        if (block[l] >= 0) members[block[l]].push_back(int(l));
    std::erase_if(members, [&](const auto& m) { return m.second.size() < (told ? 2u : 3u); });
    if (members.empty()) return out;
    std::vector<char> judged(n, 0);
    for (const auto& [root, group] : members)
        for (int a : group) judged[std::size_t(a)] = 1;
    struct Send {
        std::int64_t s;
        int to;
    };
    std::vector<std::vector<Send>> sends(n);
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || !judged[std::size_t(a)] || !dpPair(a, b)) continue;
        const std::int64_t s = flows.startNs[r] - sd.offsetOf(flows.src[r]);
        if (!told || sd.isExchange(flows.src[r], flows.dst[r], s)) sends[std::size_t(a)].push_back({s, b});
    }
    std::vector<std::size_t> rankOf(n, R);
    for (std::size_t r = 0; r < R; ++r)
        if (const int l = ix.local(tl.ranks[r].nic); l >= 0) rankOf[std::size_t(l)] = r;
    const std::vector<std::int64_t>& ends = sd.syncEndNs; // each step's end
    // Per member and step: the starts of its exchanges.
    std::vector<std::vector<std::int64_t>> starts(n * K);
    for (const auto& [root, group] : members) {
        for (int a : group) {
            auto& v = sends[std::size_t(a)];
            auto byStart = [](const Send& x, const Send& y) { return x.s < y.s; };
            if (!std::is_sorted(v.begin(), v.end(), byStart)) std::sort(v.begin(), v.end(), byStart);
            for (std::size_t i = 0; i < v.size();) {
                std::size_t j = i;
                std::set<int> peers;
                while (j < v.size() && v[j].s - v[i].s <= p.exchangeWindowNs) {
                    if (find(v[j].to) == root) peers.insert(v[j].to);
                    ++j;
                }
                const std::size_t k = std::size_t(std::lower_bound(ends.begin(), ends.end(), v[i].s) - ends.begin());
                if (peers.size() >= std::max<std::size_t>(told ? 1 : 2, group.size() / 2) && k < K &&
                    v[i].s >= sd.steps[k].startNs)
                    starts[std::size_t(a) * K + k].push_back(v[i].s);
                i = j;
            }
        }
        // A step is judged when every member shows the group's usual count of exchanges (the most common over
        // the job's steps, the larger on a tie): the members are matched exchange by exchange, and a lost record
        // on each side (the same count, shifted) would make one of them late from one loss to the other.
        std::map<std::size_t, std::size_t> seen;
        for (std::size_t k = 0; k < K; ++k)
            for (int a : group) ++seen[starts[std::size_t(a) * K + k].size()];
        std::size_t m = 0, mostSeen = 0;
        for (const auto& [count, times] : seen)
            if (times >= mostSeen) std::tie(m, mostSeen) = std::pair(count, times);
        for (std::size_t k = 0; k < K; ++k) {
            if (m < 3 || std::any_of(group.begin(), group.end(),
                                     [&](int a) { return starts[std::size_t(a) * K + k].size() != m; }))
                continue;
            std::vector<std::int64_t> first(m, std::numeric_limits<std::int64_t>::max());
            for (int a : group)
                for (std::size_t i = 0; i < m; ++i) first[i] = std::min(first[i], starts[std::size_t(a) * K + k][i]);
            std::vector<double> spacing;
            for (std::size_t i = 1; i < m; ++i) spacing.push_back(double(first[i] - first[i - 1]));
            const double usual = medianOf(spacing);
            if (usual <= 0) continue;
            std::vector<double> late;
            for (int a : group) {
                std::vector<double> own;
                for (std::size_t i = 0; i < m; ++i) own.push_back(double(starts[std::size_t(a) * K + k][i] - first[i]));
                late.push_back(medianOf(own));
            }
            for (std::size_t g = 0; g < group.size(); ++g) {
                const std::size_t r = rankOf[std::size_t(group[g])];
                if (r == R) continue;
                std::vector<double> others = late;
                others.erase(others.begin() + std::ptrdiff_t(g));
                const bool standsOut = late[g] > kStandOut * medianOf(others);
                out.share[r * K + k] = standsOut ? late[g] / usual : 0.0;
                out.ns[r * K + k] = late[g];
            }
        }
    }
    return out;
}

std::vector<Finding> slowRanks(const JobTimeline& tl, const StepDivision& sd, const Lateness& late,
                               const DiagnosisParams& p) {
    const std::size_t R = tl.ranks.size(), K = tl.steps.size();
    std::vector<Finding> out;
    if (R == 0 || K == 0) return out;

    // Compute per rank and step: busy time before its PP sends. Only where the rank saw the whole traffic of
    // its stage in that step: a transfer lost by the exporter merges two ops into one sample.
    std::vector<double> value(R * K, kNaN);
    const int stages = tl.stageCount();
    std::vector<std::vector<std::size_t>> ofStage(static_cast<std::size_t>(stages));
    for (std::size_t r = 0; r < R; ++r) ofStage[std::size_t(tl.ranks[r].stage)].push_back(r);
    // The stage's count in a step: a pipeline schedule gives every rank of a stage the same, and a lost record
    // only removes a transfer, so it is the largest count that two ranks share (one rank alone could show a
    // transfer split in two). Not the most common one: at a few % loss half the ranks of a stage miss one
    // transfer each, a different one, which renumbers their micro-batches.
    // The largest value that `need` entries of v share (v sorted, largest first), or none.
    auto largestShared = [](std::vector<std::uint32_t>& v, std::size_t need) -> std::optional<std::uint32_t> {
        std::sort(v.begin(), v.end(), std::greater<>());
        for (std::size_t i = 0; i + need <= v.size(); ++i)
            if (v[i] == v[i + need - 1]) return v[i];
        return std::nullopt;
    };
    auto usualOf = [&](std::vector<std::uint32_t>& v) { return largestShared(v, 2).value_or(v.front()); };
    // With few ranks per stage (two pipelines: two ranks) all of them may miss a transfer in the same step (at
    // 2% loss and one record per transfer, most ranks lose one in most steps), and the count they share is then
    // short too. So the stage's count over the job's steps (the first and last aside, which the capture may
    // cut) bounds it from below: the largest count that at least a tenth of the stage's (rank, step) samples
    // reach. A step whose shared count falls below it is not judged.
    auto fullOf = [&](std::vector<std::uint32_t>& v) {
        return largestShared(v, std::max<std::size_t>(2, v.size() / 10)).value_or(0);
    };
    std::vector<std::array<std::uint32_t, 3>> full(ofStage.size(), {0, 0, 0});
    if (K >= 5)
        for (std::size_t st = 0; st < ofStage.size(); ++st) {
            std::vector<std::uint32_t> a, b, c;
            for (std::size_t r : ofStage[st])
                for (std::size_t k = 1; k + 1 < K; ++k) {
                    const RankStepStats& s = tl.ranks[r].stepStats[k];
                    a.push_back(s.forwardSamples + s.backwardSamples);
                    b.push_back(s.ppSends);
                    c.push_back(s.ppRecvs);
                }
            full[st] = {fullOf(a), fullOf(b), fullOf(c)};
        }
    std::vector<std::uint32_t> ns, sends, recvs;
    for (std::size_t k = 0; k < K; ++k) {
        for (std::size_t st = 0; st < ofStage.size(); ++st) {
            const auto& members = ofStage[st];
            ns.clear();
            sends.clear();
            recvs.clear();
            for (std::size_t r : members) {
                const RankStepStats& s = tl.ranks[r].stepStats[k];
                ns.push_back(s.forwardSamples + s.backwardSamples);
                sends.push_back(s.ppSends);
                recvs.push_back(s.ppRecvs);
            }
            if (members.empty()) continue;
            const std::uint32_t n = usualOf(ns), sm = usualOf(sends), rm = usualOf(recvs);
            if (n == 0 || n < full[st][0] || sm < full[st][1] || rm < full[st][2]) continue;
            for (std::size_t r : members) {
                const RankStepStats& s = tl.ranks[r].stepStats[k];
                if (s.forwardSamples + s.backwardSamples == n && s.ppSends == sm && s.ppRecvs == rm)
                    value[r * K + k] = double(s.forwardComputeNs + s.backwardComputeNs);
            }
        }
    }
    // Peers: the same stage in other pipelines (other hosts): their median, or with two pipelines the faster
    // one. A stage on one host (dp = 1) has no peers; its ranks are compared with their own usual instead.
    std::vector<double> ratio(R * K, kNaN), z(R * K, kNaN), peerMedian(R * K, kNaN);
    std::vector<double> vals;
    for (const auto& members : ofStage) {
        std::set<int> hosts;
        for (std::size_t r : members) hosts.insert(tl.ranks[r].host >= 0 ? tl.ranks[r].host : -1 - int(r));
        if (hosts.size() >= 2) {
            for (std::size_t k = 0; k < K; ++k) {
                vals.clear();
                for (std::size_t r : members)
                    if (!std::isnan(value[r * K + k])) vals.push_back(value[r * K + k]);
                if (vals.size() < 2) continue;
                RobustStats st = robustStats(vals);
                if (hosts.size() == 2) {
                    // Two pipelines: no majority, but compute is never faster than normal: the faster one is it.
                    st.median = *std::min_element(vals.begin(), vals.end());
                    st.sigma = 0;
                }
                for (std::size_t r : members) {
                    const double v = value[r * K + k];
                    if (std::isnan(v)) continue;
                    ratio[r * K + k] = ratioOf(st, v);
                    z[r * K + k] = zOf(st, v, p.minSigmaShare * 2);
                    peerMedian[r * K + k] = st.median;
                }
            }
        } else {
            for (std::size_t r : members) {
                vals.clear();
                for (std::size_t k = 1; k < K; ++k)
                    if (!std::isnan(value[r * K + k])) vals.push_back(value[r * K + k]);
                if (vals.size() < 5) continue;
                const RobustStats st = robustStats(vals);
                for (std::size_t k = 0; k < K; ++k) {
                    const double v = value[r * K + k];
                    if (std::isnan(v)) continue;
                    ratio[r * K + k] = ratioOf(st, v);
                    z[r * K + k] = zOf(st, v, p.minSigmaShare * 2);
                    peerMedian[r * K + k] = st.median;
                }
            }
        }
    }

    // Flag (rank, step); group by TP group: the ranks of one host in one stage.
    const double lagFloor = p.minLagShare * double(sd.medianStepNs);
    // (host, stage) -> step -> ranks, each with what flagged it: the evidence of a finding is what raised it.
    enum Signal : unsigned { kCompute = 1, kLag = 2, kLate = 4 };
    std::map<std::pair<int, int>, std::map<int, std::vector<std::pair<std::size_t, unsigned>>>> flagged;
    for (std::size_t r = 0; r < R; ++r) {
        const RankTimeline& rt = tl.ranks[r];
        for (std::size_t k = 0; k < K; ++k) {
            const bool slowCompute = !std::isnan(ratio[r * K + k]) && ratio[r * K + k] >= 1.0 + p.minRankExcess &&
                                     z[r * K + k] >= p.kSigma;
            const bool lagging = lagFloor > 0 && double(rt.stepStats[k].dpStartLagNs) > lagFloor;
            const bool lateExpert = late.share[r * K + k] >= p.minLateShare; // NaN: not measured
            const unsigned signals = (slowCompute ? kCompute : 0u) | (lagging ? kLag : 0u) | (lateExpert ? kLate : 0u);
            if (signals) flagged[{rt.host >= 0 ? rt.host : -1 - int(r), rt.stage}][int(k)].push_back({r, signals});
        }
    }
    for (const auto& [key, bySteps] : flagged) {
        std::vector<int> steps;
        for (const auto& [k, ranks] : bySteps) steps.push_back(k);
        for (const Episode& e : episodesOf(steps, p.maxEpisodeGap)) {
            std::map<std::size_t, int> hits;
            std::vector<double> ratios, own, peers, lags, lateNs, lateShares;
            for (int k = e.first; k <= e.last; ++k) {
                auto it = bySteps.find(k);
                if (it == bySteps.end()) continue;
                for (const auto& [r, signals] : it->second) {
                    ++hits[r];
                    const std::size_t i = r * K + std::size_t(k);
                    if (signals & kCompute) {
                        ratios.push_back(ratio[i]);
                        own.push_back(value[i]);
                        peers.push_back(peerMedian[i]);
                    }
                    if (signals & kLag) lags.push_back(double(tl.ranks[r].stepStats[std::size_t(k)].dpStartLagNs));
                    if (signals & kLate) {
                        lateNs.push_back(late.ns[i]);
                        lateShares.push_back(late.share[i]);
                    }
                }
            }
            std::size_t best = hits.begin()->first;
            for (const auto& [r, n] : hits)
                if (n > hits[best]) best = r;
            Finding f;
            f.kind = "slow_rank";
            f.ip = tl.ranks[best].ip;
            for (const auto& [r, n] : hits) f.group.push_back(tl.ranks[r].ip);
            f.firstStep = tl.steps[std::size_t(e.first)].index;
            f.lastStep = tl.steps[std::size_t(e.last)].index;
            const double lag = lags.empty() ? 0 : *std::max_element(lags.begin(), lags.end());
            const double r = ratios.empty() ? 1.0 : medianOf(ratios);
            // Without compute samples: 1 + the lag as a share of the exchange interval (all-to-all), or of the
            // median step (DP sync start).
            f.score = !ratios.empty()   ? r
                      : !lateNs.empty() ? 1.0 + medianOf(lateShares)
                                        : 1.0 + lag / std::max(1.0, double(sd.medianStepNs));
            const std::string who = tl.ranks[best].label + " (" + f.ip + ")" +
                                    (hits.size() > 1 ? " and " + std::to_string(hits.size() - 1) +
                                                           " more GPUs of its TP group"
                                                     : "");
            const std::string stage = " (PP stage " + std::to_string(key.second) + ")";
            const bool many = hits.size() > 1;
            if (!ratios.empty()) {
                f.message = "slow rank: " + who + stage + (many ? " compute " : " computes ") + num(r, 2) +
                            "× longer than " + (many ? "their" : "its") + " peers (" +
                            ms(medianOf(own)) + " vs " + ms(medianOf(peers)) + " per step) in " +
                            stepRange(f.firstStep, f.lastStep) + "; the rest of the job waits for " +
                            (many ? "them" : "it");
                f.evidence.push_back({"compute_ms", medianOf(own) / 1e6});
                f.evidence.push_back({"peer_compute_ms", medianOf(peers) / 1e6});
                f.evidence.push_back({"ratio", r});
            } else if (!lateNs.empty()) {
                f.message = "slow rank: " + who + stage + (many ? " start" : " starts") +
                            " the expert all-to-all " + ms(medianOf(lateNs)) + " after the rest of " +
                            (many ? "their" : "its") + " EP group at every exchange (median) in " +
                            stepRange(f.firstStep, f.lastStep) + "; the group waits for " + (many ? "them" : "it") +
                            " each time";
                f.evidence.push_back({"all_to_all_lag_ms", medianOf(lateNs) / 1e6});
            } else {
                f.message = "slow rank: " + who + stage + (many ? " start" : " starts") +
                            " the gradient sync up to " + ms(lag) + " after the rest of " + (many ? "their" : "its") +
                            " DP group in " + stepRange(f.firstStep, f.lastStep);
            }
            f.evidence.push_back({"dp_start_lag_ms", lag / 1e6});
            f.evidence.push_back({"pp_stage", double(key.second)});
            f.evidence.push_back({"gpus", double(hits.size())});
            f.evidence.push_back({"steps", double(e.last - e.first + 1)});
            out.push_back(std::move(f));
        }
    }
    return out;
}

// ---- slow links --------------------------------------------------------------------------------------------

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

std::vector<Finding> slowLinks(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                               const JobIndex& ix, const StepDivision& sd, const DiagnosisParams& p) {
    std::vector<Finding> out;
    const std::size_t K = sd.steps.size(), n = ix.size();
    if (K == 0 || n == 0) return out;
    std::vector<std::int64_t> ends(K);
    for (std::size_t k = 0; k < K; ++k) ends[k] = sd.steps[k].endNs;
    auto stepOf = [&](std::int64_t s) {
        if (s < sd.steps.front().startNs) return K;
        return std::size_t(std::lower_bound(ends.begin(), ends.end(), s) - ends.begin());
    };
    // Transfers: an exporter splits a long transfer into records at its active timeout, so a slow transfer
    // gives more, smaller records than a fast one of the same size. Records that continue each other on one
    // channel (same sender, receiver and source port, touching in time) are merged back first.
    struct Xfer {
        std::int64_t s, e;
        std::uint64_t bytes;
        std::int32_t a, b;
        std::uint32_t step;
        std::uint16_t port;
        std::int8_t slow = -1; // -1: no reference speed for its size in its step; 0 / 1
    };
    std::vector<Xfer> xfers;
    xfers.reserve(job.records.size() / 2 + 16);
    std::vector<std::vector<std::size_t>> open(n); // per sender: indices of its latest transfer per channel
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || b < 0 || flows.bytes[r] == 0) continue;
        const std::int64_t s = flows.startNs[r], e = std::max(flows.endNs[r], flows.startNs[r] + 1);
        bool merged = false;
        for (std::size_t& i : open[std::size_t(a)]) {
            Xfer& x = xfers[i];
            if (x.b != b || x.port != flows.srcPort[r]) continue;
            if (s <= x.e + 2'000) {
                x.e = std::max(x.e, e);
                x.bytes += flows.bytes[r];
                merged = true;
            } else {
                i = xfers.size();
                xfers.push_back({s, e, flows.bytes[r], a, b, 0, flows.srcPort[r]});
                merged = true;
            }
            break;
        }
        if (!merged) {
            open[std::size_t(a)].push_back(xfers.size());
            xfers.push_back({s, e, flows.bytes[r], a, b, 0, flows.srcPort[r]});
        }
    }
    for (Xfer& x : xfers) x.step = std::uint32_t(stepOf(x.s - sd.offsetOf(ix.endpoint(x.a))));

    // Reference throughput per (step, kind, size class): the median of the job's transfers.
    constexpr std::size_t kClasses = 65;
    auto bucketOf = [&](const Xfer& x) {
        const std::size_t cls = std::size_t(64 - __builtin_clzll(x.bytes));
        return (std::size_t(x.step) * 2 + (ix.kind(x.a, x.b) == PairKind::DP ? 1 : 0)) * kClasses + cls;
    };
    auto throughput = [](const Xfer& x) { return double(x.bytes) / double(x.e - x.s); };
    std::vector<std::vector<float>> samples(K * 2 * kClasses);
    for (const Xfer& x : xfers)
        if (x.step < K) samples[bucketOf(x)].push_back(float(throughput(x)));
    std::vector<double> ref(samples.size(), 0.0), refSigma(samples.size(), 0.0);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        auto& v = samples[i];
        if (v.size() >= 8) { // fewer transfers of that size: not enough to know what is normal
            const RobustStats st = robustStats(std::vector<double>(v.begin(), v.end()));
            ref[i] = st.median;
            refSigma[i] = std::max(st.sigma, p.minSigmaShare * st.median);
        }
        std::vector<float>().swap(v);
    }
    // Per (NIC, step): transfers, slow transfers, their bytes, time and time at the reference speed.
    struct Tally {
        std::uint32_t total = 0, slow = 0;
        double bytes = 0, ns = 0, refNs = 0;
    };
    std::vector<Tally> tally(n * K);
    std::unordered_map<std::uint64_t, std::uint32_t> slowPairs; // (step, a, b) -> slow transfers
    auto pairKey = [](std::size_t k, int a, int b) {
        return (std::uint64_t(k) << 40) | (std::uint64_t(std::min(a, b)) << 20) | std::uint64_t(std::max(a, b));
    };
    for (Xfer& x : xfers) {
        if (x.step >= K) continue;
        const std::size_t bucket = bucketOf(x);
        const double rf = ref[bucket];
        if (rf <= 0) continue;
        const double tp = throughput(x);
        const bool slow = tp * p.minLinkSlowdown <= rf && rf - tp >= p.kSigma * refSigma[bucket];
        x.slow = std::int8_t(slow);
        for (int v : {x.a, x.b}) {
            Tally& t = tally[std::size_t(v) * K + x.step];
            ++t.total;
            if (!slow) continue;
            ++t.slow;
            t.bytes += double(x.bytes);
            t.ns += double(x.bytes) / tp;
            t.refNs += double(x.bytes) / rf;
        }
        if (slow) ++slowPairs[pairKey(x.step, x.a, x.b)];
    }

    // A NIC is a candidate in a step when (nearly) all its transfers are slow. Per step and candidate: how many
    // of its slow peers are not candidates (healthy NICs that are slow only with it).
    auto isCandidate = [&](std::size_t k, std::size_t x) {
        const Tally& t = tally[x * K + k];
        return t.total >= p.minNicRecords && double(t.slow) >= p.slowNicShare * double(t.total);
    };
    std::unordered_map<std::uint64_t, std::uint32_t> healthyPeers; // (step, nic) -> peers
    for (const auto& [key, count] : slowPairs) {
        const std::uint64_t k = key >> 40, a = (key >> 20) & 0xFFFFF, b = key & 0xFFFFF;
        const bool ca = isCandidate(k, a), cb = isCandidate(k, b);
        if (ca && !cb) ++healthyPeers[(k << 20) | a];
        if (cb && !ca) ++healthyPeers[(k << 20) | b];
    }
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
    std::map<std::string, std::vector<int>> nicsOfPlace;
    // The transfers of each step, and per member the hops among a set of NICs in a step: bytes and time moved,
    // its fastest hop, the sides it was seen on, and how many of the hops were judged and found slow.
    std::vector<std::vector<std::uint32_t>> xfersOfStep(K);
    for (std::uint32_t i = 0; i < xfers.size(); ++i)
        if (xfers[i].step < K) xfersOfStep[xfers[i].step].push_back(i);
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
        for (std::uint32_t i : xfersOfStep[k]) {
            const Xfer& x = xfers[i];
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
    for (std::size_t k = 0; k < K; ++k) {
        std::vector<int> cand;
        for (std::size_t x = 0; x < n; ++x)
            if (isCandidate(k, x)) cand.push_back(int(x));
        if (cand.empty()) continue;
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
            const HopsAmong h = hopsAmong(k, [&](int v) { return ix.dpGroup(v) == g; });
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
        if (cand.empty()) continue;
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
    }
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
            for (int k = e.first; k <= e.last; ++k)
                for (int x : nics) {
                    const Tally& t = tally[std::size_t(x) * K + std::size_t(k)];
                    sum.total += t.total;
                    sum.slow += t.slow;
                    sum.bytes += t.bytes;
                    sum.ns += t.ns;
                    sum.refNs += t.refNs;
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

// ---- slow stages -------------------------------------------------------------------------------------------

// A stage slower by construction (the last one carrying the loss and a large vocabulary): its micro-batch
// takes longer than the other stages' in every pipeline, all through the job, and 1F1B runs at the pace of
// its slowest stage. Per stage, the time of one micro-batch as the network sees it: a middle stage's busy
// time before its forward send plus before its backward send; the last stage sends no activations, so the
// busy time before its backward send holds its forward too. Stage 0 sends no gradients: its busy time before
// a forward send mixes warm-up forwards and backward + forward pairs, so it is not judged (nor used as a
// reference). Medians over the job's steps (step 0 aside), per pipeline (DP replica, one host group): a stage
// is slow when in every pipeline it takes at least minRankExcess longer than the median of the other judged
// stages there. It costs the step what its extra time per micro-batch adds over the step's micro-batches.
std::vector<Finding> slowStages(const JobTimeline& tl, std::int64_t medianStepNs, const DiagnosisParams& p) {
    std::vector<Finding> out;
    const std::size_t K = tl.steps.size();
    const int stages = tl.stageCount();
    if (stages < 3 || K < 3) return out;
    // (host, stage) -> per-micro-batch times and counts: the ranks of a stage on one host are one pipeline's
    // copy of it (its TP group), or a few.
    std::map<std::pair<int, int>, std::vector<double>> perMb, counts;
    for (const RankTimeline& r : tl.ranks) {
        if (r.stage == 0) continue;
        const bool last = r.stage == stages - 1;
        for (std::size_t k = 1; k < K && k < r.stepStats.size(); ++k) {
            const RankStepStats& s = r.stepStats[k];
            if (s.backwardSamples == 0 || (!last && s.forwardSamples == 0)) continue;
            double t = double(s.backwardComputeNs) / s.backwardSamples;
            if (!last) t += double(s.forwardComputeNs) / s.forwardSamples;
            perMb[{r.host, r.stage}].push_back(t);
            counts[{r.host, r.stage}].push_back(double(s.backwardSamples));
        }
    }
    std::map<int, std::vector<double>> stageTime;                 // stage -> median per pipeline
    std::map<int, double> microBatches;
    for (auto& [key, v] : perMb) {
        stageTime[key.second].push_back(medianOf(v));
        microBatches[key.second] = std::max(microBatches[key.second], medianOf(counts[key]));
    }
    std::map<int, double> medianOfStage;
    for (auto& [s, v] : stageTime) medianOfStage[s] = medianOf(v);
    if (medianOfStage.size() < 2) return out;
    int worst = -1;
    for (const auto& [s, t] : medianOfStage)
        if (worst < 0 || t > medianOfStage[worst]) worst = s;
    std::vector<double> others;
    for (const auto& [s, t] : medianOfStage)
        if (s != worst) others.push_back(t);
    const double ref = medianOf(others);
    // Slow in every pipeline, not in the median only (a slow rank of one pipeline is a slow_rank): its fastest
    // pipeline is slower than the slowest pipeline of every other stage.
    std::vector<double> refs;
    for (const auto& [s, v] : stageTime)
        if (s != worst) refs.insert(refs.end(), v.begin(), v.end());
    const double slowestOther = refs.empty() ? ref : *std::max_element(refs.begin(), refs.end());
    const std::vector<double>& own = stageTime[worst];
    const double ownFastest = *std::min_element(own.begin(), own.end());
    if (!(ref > 0) || ownFastest < (1.0 + p.minRankExcess) * ref ||
        ownFastest < (1.0 + p.minRankExcess / 2) * slowestOther)
        return out;
    const double t = medianOfStage[worst];
    const double m = microBatches[worst];
    const double cost = (t - ref) * m;
    Finding f;
    f.kind = "slow_stage";
    f.stage = worst;
    f.firstStep = tl.steps.front().index;
    f.lastStep = tl.steps.back().index;
    f.score = t / ref;
    f.evidence = {{"stage", double(worst)},
                  {"micro_batch_ms", t / 1e6},
                  {"other_stages_micro_batch_ms", ref / 1e6},
                  {"micro_batches", m},
                  {"cost_ms_per_step", cost / 1e6}};
    const double stepNs = double(medianStepNs);
    if (stepNs > 0) f.evidence.push_back({"cost_share", cost / stepNs});
    f.message = "slow stage: PP stage " + std::to_string(worst) + (worst == stages - 1 ? " (the last)" : "") +
                " takes " + ms(t) + " per micro-batch against " + ms(ref) + " for the other stages (" +
                num(f.score, 2) + "×) in every pipeline, all through the job; over " + num(m, 0) +
                " micro-batches that is about " + ms(cost) + " per step" +
                (stepNs > 0 ? " (" + num(100.0 * cost / stepNs, 0) + "% of the " + ms(stepNs) + " step)" : "") +
                " — a structural imbalance (e.g. the loss and vocabulary on the last stage): rebalance the layers";
    out.push_back(std::move(f));
    return out;
}

// ---- slow steps --------------------------------------------------------------------------------------------

std::vector<Finding> slowSteps(const StepDivision& sd, const std::vector<Finding>& causes, const DiagnosisParams& p,
                               std::vector<std::uint8_t>& slow, std::vector<std::string>& notes) {
    std::vector<Finding> out;
    const std::size_t K = sd.steps.size();
    if (K < 4) return out;
    std::vector<double> d, lead;
    for (std::size_t k = 1; k < K; ++k) {
        d.push_back(double(sd.steps[k].durationNs()));
        lead.push_back(double(sd.firstActivityNs[k] - sd.steps[k].startNs));
    }
    const RobustStats st = robustStats(d);
    // The usual step: the job's median, unless the sorted durations fall apart into clusters (a jump of
    // minStepExcess / 2 between neighbours) and the fastest holds at least a fifth of the steps (three or more)
    // — a step is never faster than usual, and when over half of them are slowed the median is a slow one (two
    // 5-step anomalies in 19 steps hid five steps 1.55x long: robust z 3.4 against the median; three anomalies
    // of 3 to 5 steps each left 7 usual steps of 19, and the MAD of the durations hid five 3x steps).
    RobustStats base = st;
    {
        std::vector<double> sorted = d;
        std::sort(sorted.begin(), sorted.end());
        std::size_t fast = 1;
        while (fast < sorted.size() && sorted[fast] <= sorted[fast - 1] * (1.0 + p.minStepExcess / 2)) ++fast;
        if (fast < sorted.size() && fast >= 3 && 5 * fast >= sorted.size()) {
            sorted.resize(fast);
            const RobustStats c = robustStats(sorted);
            if (c.median * (1.0 + p.minStepExcess / 2) < st.median) base = c;
        }
    }
    const bool usual = base.median < st.median;
    const double leadBase = medianOf(lead);
    const double slowAt = base.median * (1.0 + p.minStepExcess);
    for (std::size_t k = 1; k < K; ++k)
        if (d[k - 1] >= slowAt && zOf(base, d[k - 1], p.minSigmaShare) >= p.kSigma) slow[k] = 1;
    // A BOCD regime (between change points) whose median is slow: a sustained slowdown, which the k-sigma
    // rule alone misses once it lasts long enough to move the job's median.
    std::vector<std::size_t> bounds = {1};
    for (std::size_t cp : sd.changePoints)
        if (cp > 1 && cp < K) bounds.push_back(cp);
    bounds.push_back(K);
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        if (bounds[i + 1] - bounds[i] < 2) continue;
        const double m = medianOf(std::vector<double>(d.begin() + std::ptrdiff_t(bounds[i] - 1),
                                                      d.begin() + std::ptrdiff_t(bounds[i + 1] - 1)));
        if (m < slowAt) continue;
        for (std::size_t k = bounds[i]; k < bounds[i + 1]; ++k)
            if (d[k - 1] >= base.median * (1.0 + p.minStepExcess / 2)) slow[k] = 1;
    }

    // Without DP traffic a step ends with its last PP transfer, the gradient into stage 0: stage 0's last
    // backwards (and any backlog of them) fall into the next step, and so does its first forward, as silence
    // before the step's first record. So a slow stage 0 also explains the step after its episode, and in its
    // steps and that one as much silence as it causes between its own slow steps (or its extra compute per
    // step, for a one-step episode) is its work, not a pause.
    auto spillInto = [&](int idx) {
        double spill = 0;
        if (sd.source != StepSource::Pipeline) return spill;
        for (const Finding& f : causes) {
            if (f.kind != "slow_rank" || idx < f.firstStep || idx - 1 > f.lastStep) continue;
            double stage = -1, own = 0, peer = 0;
            for (const auto& [key, v] : f.evidence) {
                if (key == "pp_stage") stage = v;
                if (key == "compute_ms") own = v;
                if (key == "peer_compute_ms") peer = v;
            }
            if (stage != 0) continue;
            std::vector<double> inside; // silence before the episode's steps after its first
            for (std::size_t k = 1; k < K; ++k)
                if (sd.steps[k].index > f.firstStep && sd.steps[k].index <= f.lastStep)
                    inside.push_back(lead[k - 1] - leadBase);
            spill = std::max({spill, std::max(0.0, own - peer) * 1e6, medianOf(inside)});
        }
        return spill;
    };
    // Which slow steps are slow_step findings: a job-wide silence before the step (a pause), or nothing else
    // (no slow rank or link in that step) to explain it.
    std::vector<int> flagged;
    for (std::size_t k = 1; k < K; ++k) {
        if (!slow[k]) continue;
        const double extra = d[k - 1] - base.median;
        const int idx = sd.steps[k].index;
        const double spill = spillInto(idx);
        const double silence = lead[k - 1] - leadBase - spill;
        const bool explained = spill > 0 || std::any_of(causes.begin(), causes.end(), [&](const Finding& f) {
                                   return f.firstStep <= idx && idx <= f.lastStep;
                               });
        if (silence >= p.pauseShare * extra || !explained) flagged.push_back(int(k));
    }
    std::vector<Episode> eps = episodesOf(flagged, 0);
    auto describe = [&](const Episode& e, Finding& f) {
        double worst = 0, silence = 0;
        for (int k = e.first; k <= e.last; ++k) {
            worst = std::max(worst, d[std::size_t(k) - 1]);
            silence = std::max(silence, lead[std::size_t(k) - 1] - leadBase);
        }
        f.kind = "slow_step";
        f.firstStep = sd.steps[std::size_t(e.first)].index;
        f.lastStep = sd.steps[std::size_t(e.last)].index;
        f.score = worst / base.median;
        f.evidence = {{"step_ms", worst / 1e6},
                      {"median_step_ms", st.median / 1e6},
                      {"usual_step_ms", base.median / 1e6},
                      {"ratio", f.score},
                      {"silence_ms", std::max(0.0, silence) / 1e6},
                      {"steps", double(e.last - e.first + 1)}};
        return std::pair(worst, silence);
    };
    // Periodic episodes (checkpoints, evaluation every N steps) are one pattern finding: the longest chain of
    // episodes each one period (+-1 step) after the previous, over the periods the episodes' spacings offer.
    // Episodes off the chain (another anomaly) stay findings of their own.
    if (int(eps.size()) >= p.minPatternRepeats) {
        std::vector<std::size_t> best;
        int bestPeriod = 0;
        for (std::size_t i = 0; i < eps.size(); ++i)
            for (std::size_t j = i + 1; j < eps.size(); ++j) {
                const int period = eps[j].first - eps[i].first;
                if (period < 2) continue;
                std::vector<std::size_t> chain = {i};
                for (std::size_t k = i + 1; k < eps.size(); ++k)
                    if (std::abs(eps[k].first - eps[chain.back()].first - period) <= 1) chain.push_back(k);
                if (chain.size() > best.size() || (chain.size() == best.size() && period < bestPeriod)) {
                    best = std::move(chain);
                    bestPeriod = period;
                }
            }
        if (int(best.size()) >= p.minPatternRepeats) {
            std::vector<double> gaps;
            for (std::size_t i = 1; i < best.size(); ++i)
                gaps.push_back(double(eps[best[i]].first - eps[best[i - 1]].first));
            const int period = int(std::lround(medianOf(gaps)));
            Finding f;
            auto [worst, silence] = describe({eps[best.front()].first, eps[best.back()].last}, f);
            (void)silence;
            f.kind = "periodic_stall";
            f.periodSteps = period;
            double extra = 0; // time the stalls add, over the usual step
            for (std::size_t i : best) {
                f.occurrences.push_back(sd.steps[std::size_t(eps[i].first)].index);
                for (int k = eps[i].first; k <= eps[i].last; ++k) extra += d[std::size_t(k) - 1] - base.median;
            }
            f.evidence.push_back({"period_steps", double(period)});
            f.evidence.push_back({"occurrences", double(best.size())});
            f.evidence.push_back({"stall_ms_each", extra / double(best.size()) / 1e6});
            std::string list;
            for (std::size_t i = 0; i < f.occurrences.size() && i < 6; ++i)
                list += (i ? ", " : "") + std::to_string(f.occurrences[i]);
            if (f.occurrences.size() > 6) list += ", …";
            f.message = "periodic stall: every " + std::to_string(period) + " steps (" +
                        std::to_string(best.size()) + " times: steps " + list + "), up to " + num(f.score, 2) +
                        (usual ? "× the usual step of " : "× the median step of ") + ms(base.median) + ", " +
                        ms(extra / double(best.size())) +
                        " lost each time — a recurring job-wide pause such as checkpointing or evaluation";
            out.push_back(std::move(f));
            notes.push_back("slow steps recur every " + std::to_string(period) +
                            " steps: reported once as a periodic_stall pattern");
            std::vector<Episode> rest;
            for (std::size_t i = 0; i < eps.size(); ++i)
                if (std::find(best.begin(), best.end(), i) == best.end()) rest.push_back(eps[i]);
            eps = std::move(rest);
        }
    }
    for (const Episode& e : eps) {
        Finding f;
        auto [worst, silence] = describe(e, f);
        const std::string what = e.first == e.last ? stepRange(f.firstStep, f.lastStep) + " took " + ms(worst)
                                                   : stepRange(f.firstStep, f.lastStep) + " took up to " + ms(worst);
        f.message = "slow step: " + what + ", " + num(f.score, 2) +
                    (usual ? "× the job's usual step of " : "× the job's median of ") + ms(base.median) + "; " +
                    (silence >= p.pauseShare * (worst - base.median)
                         ? "for " + ms(silence) + " before it the whole job was silent (a pause or stall)"
                         : "no slow rank or link explains it");
        out.push_back(std::move(f));
    }
    return out;
}

} // namespace

Diagnosis diagnose(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                   const ParallelismResult& par, const StepDivision& sd, const JobTimeline& tl,
                   const DiagnosisParams& p, const JobIndex* index) {
    Diagnosis out;
    out.slow.assign(sd.steps.size(), 0);
    if (sd.steps.empty()) return out;
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    std::vector<Finding> ranks;
    if (tl.steps.size() == sd.steps.size()) ranks = slowRanks(tl, sd, expertLateness(flows, ix, job, sd, tl, p), p);
    std::vector<Finding> links = slowLinks(flows, topology, job, ix, sd, p);
    std::vector<Finding> switches = slowSwitches(links);
    std::vector<Finding> causes = ranks;
    causes.insert(causes.end(), links.begin(), links.end());
    std::vector<Finding> steps = slowSteps(sd, causes, p, out.slow, out.notes);
    std::vector<Finding> stages;
    if (tl.steps.size() == sd.steps.size()) stages = slowStages(tl, sd.medianStepNs, p);
    for (auto* list : {&stages, &steps, &ranks, &links, &switches})
        for (Finding& f : *list) out.findings.push_back(std::move(f));
    std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
        return std::pair(a.firstStep, kindOrder(a.kind)) < std::pair(b.firstStep, kindOrder(b.kind));
    });
    return out;
}

} // namespace prism
