#include "analysis/diagnosis_internal.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace prism::diag {

// ---- slow ranks ------------------------------------------------------------------------------------------

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();

double ratioOf(const RobustStats& st, double v) { return st.median > 0 ? v / st.median : kNaN; }

// What the job would save per step of episode `e` with rank `r` (and its TP group) at its peers' pace: its extra
// compute in each step (extraAt(r * K + k), NaN where not measured: the episode's median then), or where compute
// was not measured its DP sync lag; no more than the other members of its DP group (on other hosts) waited for
// it before their sync (or, where a peer began its sync first, inside it until rank r began), where it has such
// peers: the one that waited least was next ready, and the sync would have started then. Where peers waited,
// the extra compute is at least what its ratio implies over its span before the sync (impliedAt): the busy
// time before PP sends samples only part of a rank's compute (an interleaved stage's chunks, warm-up ops
// whose input came before the step). A rank busier than every other TP group of the job (leadAt: its compute
// less the next busiest's) sets the step whoever waited where: a pipeline's slow replica holds the others at
// their first DP sync, on another stage, and its own stage's peers then wait on their PP receives, before
// their sync only the rest (a GPU 2.5x slow all run showed 6 ms of waiting there, the step 2.3 s longer). The
// job would save its lead then, up to its extra compute. (The cap by the step's own excess is the caller's.)
template <typename Extra, typename Implied, typename Lead>
double savedPerStep(const JobTimeline& tl, std::size_t r, const Episode& e, Extra&& extraAt, Implied&& impliedAt,
                    Lead&& leadAt) {
    const std::size_t K = tl.steps.size();
    std::vector<double> extra, measured;
    for (int k = e.first; k <= e.last; ++k) {
        extra.push_back(extraAt(r * K + std::size_t(k)));
        if (!std::isnan(extra.back())) measured.push_back(extra.back());
    }
    for (int k = e.first; k <= e.last; ++k) {
        double& x = extra[std::size_t(k - e.first)];
        if (std::isnan(x))
            x = measured.empty() ? double(tl.ranks[r].stepStats[std::size_t(k)].dpStartLagNs) : medianOf(measured);
        x = std::max(0.0, x);
    }
    double sum = 0;
    for (int k = e.first; k <= e.last; ++k) {
        std::vector<double> waits;
        const RankStepStats& own = tl.ranks[r].stepStats[std::size_t(k)];
        for (std::size_t q = 0; q < tl.ranks.size(); ++q) {
            const RankStepStats& peer = tl.ranks[q].stepStats[std::size_t(k)];
            if (q == r || tl.ranks[q].dpGroup != tl.ranks[r].dpGroup || tl.ranks[q].host == tl.ranks[r].host ||
                peer.dpStartNs == RankStepStats::kNoTime)
                continue;
            // A ring member ready first sends its first hop at once and waits inside the sync, for the next
            // hop's data: it waited at least from its sync start to rank r's.
            const double inside =
                own.dpStartNs == RankStepStats::kNoTime ? 0.0 : double(own.dpStartNs - peer.dpStartNs);
            waits.push_back(std::max(double(peer.dpWaitNs), inside));
        }
        double x = extra[std::size_t(k - e.first)];
        if (!waits.empty()) {
            const double implied = impliedAt(r * K + std::size_t(k));
            if (!std::isnan(implied)) x = std::max(x, implied);
            const double lead = leadAt(r * K + std::size_t(k));
            x = std::min(x, std::max(*std::min_element(waits.begin(), waits.end()), std::isnan(lead) ? 0.0 : lead));
        }
        sum += x;
    }
    return sum / double(e.last - e.first + 1);
}

} // namespace

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
Lateness expertLateness(const FlowTable& flows, const JobIndex& ix, const RecognizedJob& job, const StepDivision& sd,
                        const JobTimeline& tl, const DiagnosisParams& p) {
    constexpr double kStandOut = 4.0;
    const std::size_t R = tl.ranks.size(), K = sd.steps.size(), n = ix.size();
    Lateness out{std::vector<double>(R * K, kNaN), std::vector<double>(R * K, kNaN), std::vector<double>(R * K, kNaN),
                 std::vector<double>(R * K, kNaN)};
    if (K == 0 || n == 0) return out;
    auto dpPair = [&](int a, int b) {
        return a >= 0 && b >= 0 && ix.dpGroup(a) >= 0 && ix.dpGroup(a) == ix.dpGroup(b) &&
               ix.kind(a, b) == PairKind::DP;
    };
    const std::vector<int> block = sd.expertGroups.size() == n ? sd.expertGroups : expertGroups(flows, job, ix);
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
    // A transfer longer than the exporter's active timeout comes as pieces, each starting where the one before
    // ended: one send, not an exchange per piece (members would count different numbers of exchanges). The ends
    // of a pair's last few records, one per channel (the ports are released by now).
    struct RecentEnds {
        std::array<std::int64_t, 4> ends{kNever, kNever, kNever, kNever};
        std::size_t next = 0;
    };
    std::map<std::pair<int, int>, RecentEnds> recent;
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || !judged[std::size_t(a)] || !dpPair(a, b)) continue;
        const std::int64_t s = flows.startNs[r] - sd.offsetOf(flows.src[r]);
        if (told && !sd.isExchange(flows.src[r], flows.dst[r], s)) continue;
        RecentEnds& pair = recent[{a, b}];
        const bool piece = std::any_of(pair.ends.begin(), pair.ends.end(), [&](std::int64_t e) {
            return e != kNever && std::abs(flows.startNs[r] - e) <= p.exchangeWindowNs;
        });
        pair.ends[pair.next++ % pair.ends.size()] = flows.end(r);
        if (!piece) sends[std::size_t(a)].push_back({s, b});
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
        // Members are matched exchange by exchange in time, not by index: at 1-2% loss a member misses a few of a
        // step's hundred exchanges (one lost send of too few peers), a different few each, and index matching
        // made one of them late from its first loss on (a step was judged only where every count was equal,
        // rarely). No member starts an exchange before every member joined the one before (each waits for the
        // others' data), so the group's starts in time order fall into rounds: a round ends where a member that
        // is in it starts again. A member's lateness at a round is its start less the round's first; its
        // lateness in the step is the median over its rounds (a member that missed a round joins the next one
        // early, in the round before: an outlier).
        for (std::size_t k = 0; k < K; ++k) {
            std::vector<std::pair<std::int64_t, std::size_t>> pooled; // (start, member index in group)
            std::vector<double> spacing;
            bool few = false;
            for (std::size_t g = 0; g < group.size(); ++g) {
                const auto& v = starts[std::size_t(group[g]) * K + k];
                few = few || v.size() < 3;
                for (std::size_t i = 0; i < v.size(); ++i) {
                    pooled.push_back({v[i], g});
                    if (i > 0) spacing.push_back(double(v[i] - v[i - 1]));
                }
            }
            if (few) continue;
            const double usual = medianOf(spacing);
            if (usual <= 0) continue;
            std::sort(pooled.begin(), pooled.end());
            std::vector<std::vector<double>> own(group.size());
            std::vector<char> inRound(group.size(), 0);
            std::vector<std::int64_t> lastOwn(group.size(), kNever);
            std::int64_t roundStart = pooled.front().first;
            for (const auto& [t, g] : pooled) {
                // A start right after the member's own last one is a piece of that exchange (or its sends split
                // over two windows), no new exchange.
                if (lastOwn[g] != kNever && double(t - lastOwn[g]) < usual / 4) continue;
                lastOwn[g] = t;
                // A start that came three quarters of an interval after the round's first is the next round's:
                // its member missed this one (lost records), and joining would make it late from then on.
                if (inRound[g] || double(t - roundStart) > 0.75 * usual) {
                    std::fill(inRound.begin(), inRound.end(), 0);
                    roundStart = t;
                }
                inRound[g] = 1;
                own[g].push_back(double(t - roundStart));
            }
            std::vector<double> late, sum;
            for (const auto& v : own) {
                late.push_back(medianOf(v));
                sum.push_back(late.back() * double(v.size()));
            }
            for (std::size_t g = 0; g < group.size(); ++g) {
                const std::size_t r = rankOf[std::size_t(group[g])];
                if (r == R) continue;
                std::vector<double> others = late;
                others.erase(others.begin() + std::ptrdiff_t(g));
                const bool standsOut = late[g] > kStandOut * medianOf(others);
                out.share[r * K + k] = standsOut ? late[g] / usual : 0.0;
                out.raw[r * K + k] = late[g] / usual;
                out.ns[r * K + k] = late[g];
                out.sumNs[r * K + k] = sum[g];
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
                    a.push_back(s.forwardSamples + s.backwardSamples + s.warmupSamples);
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
                ns.push_back(s.forwardSamples + s.backwardSamples + s.warmupSamples);
                sends.push_back(s.ppSends);
                recvs.push_back(s.ppRecvs);
            }
            if (members.empty()) continue;
            const std::uint32_t n = usualOf(ns), sm = usualOf(sends), rm = usualOf(recvs);
            // A step with far more transfers than the stage's usual is several steps the division did not cut: its
            // compute is theirs together.
            if (sm > full[st][1] + full[st][1] / 4) continue;
            // Transfers decide whether the stage's were all seen; samples may be one short (a warm-up op whose input
            // came before the step has no known start), which the scaling below makes up for.
            if (n == 0 || n + 1 < full[st][0] || sm < full[st][1] || rm < full[st][2]) continue;
            // A rank that saw the stage's transfers is judged on its compute per sample, scaled to the stage's
            // count: which sends have a known op start can differ by one between ranks of a stage (a warm-up op
            // whose input came before the step began), and a sum over a different count compared nothing (a GPU
            // 2.3x slow in every step went unjudged for one sample more than its peers).
            for (std::size_t r : members) {
                const RankStepStats& s = tl.ranks[r].stepStats[k];
                const std::uint32_t own = s.forwardSamples + s.backwardSamples + s.warmupSamples;
                if (own > 0 && 2 * own >= n && s.ppSends == sm && s.ppRecvs == rm)
                    value[r * K + k] = double(s.forwardComputeNs + s.backwardComputeNs + s.warmupComputeNs) * n / own;
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
            // Pipelines whose DP peers share a host (their sync never reaches the network): the stage's ranks on
            // the host are TP peers, which keep in step, and other replicas, which need not. Three or more: a
            // rank slower than the stage's median is slower than its replicas (a GPU slow all run, which its own
            // usual hides), when by more than minRankExcess (else the own usual judges, and the job's spread
            // below stays that of the own usuals); where all keep in step the median is theirs.
            if (members.size() >= 3)
                for (std::size_t k = 0; k < K; ++k) {
                    vals.clear();
                    for (std::size_t r : members)
                        if (!std::isnan(value[r * K + k])) vals.push_back(value[r * K + k]);
                    if (vals.size() < 3) continue;
                    const RobustStats st = robustStats(vals);
                    for (std::size_t r : members) {
                        const double v = value[r * K + k];
                        if (std::isnan(v) || !(ratioOf(st, v) > std::max(ratio[r * K + k], 1.0 + p.minRankExcess)))
                            continue;
                        ratio[r * K + k] = ratioOf(st, v);
                        z[r * K + k] = zOf(st, v, p.minSigmaShare * 2);
                        peerMedian[r * K + k] = st.median;
                    }
                }
        }
    }

    // The job's own spread of compute between peers (1.4826 MAD of every measured ratio): a rank stands out only
    // beyond kSigma of it. A job whose replicas vary widely from step to step (uneven sequence lengths: a real
    // job's ratios spread 0.8-1.4) has its heaviest replica of a step 1.3-1.5x its peers by chance, every step.
    // With two pipelines the ratio is the slower one's to the faster (folded at 1), and a GPU slow all through the
    // job would set its stage's level: the spread is that of the log ratio of the two TP groups (each its members'
    // median: each GPU measures its own compute, a few µs apart) about its median over the stage's steps.
    double rankBar = 1.0 + p.minRankExcess;
    {
        std::vector<double> centred, pairNoise;
        for (double x : ratio)
            if (!std::isnan(x)) centred.push_back(x);
        for (const auto& members : ofStage) {
            std::set<int> hosts;
            for (std::size_t r : members) hosts.insert(tl.ranks[r].host >= 0 ? tl.ranks[r].host : -1 - int(r));
            if (hosts.size() != 2) continue;
            std::vector<double> logRatios;
            for (std::size_t k = 0; k < K; ++k) {
                std::map<int, std::vector<double>> byHost;
                for (std::size_t r : members)
                    if (!std::isnan(value[r * K + k]) && value[r * K + k] > 0)
                        byHost[tl.ranks[r].host >= 0 ? tl.ranks[r].host : -1 - int(r)].push_back(value[r * K + k]);
                if (byHost.size() == 2)
                    logRatios.push_back(std::log(medianOf(byHost.begin()->second) / medianOf(byHost.rbegin()->second)));
            }
            if (logRatios.size() < 4) continue;
            const double level = medianOf(logRatios);
            for (double x : logRatios) pairNoise.push_back(x - level);
        }
        if (centred.size() >= 8) {
            const RobustStats st = robustStats(centred);
            rankBar = std::max(rankBar, st.median + p.kSigma * st.sigma);
        }
        if (pairNoise.size() >= 4) rankBar = std::max(rankBar, std::exp(p.kSigma * robustStats(pairNoise).sigma));
    }
    const bool wideSpread = rankBar > 1.0 + 2 * p.minRankExcess;
    // Rank r's compute in step k less the busiest other TP group's (another host or stage), NaN where r is not
    // the busiest or not measured: savedPerStep's evidence that the job waited for it. Per step, the busiest TP
    // group (its busiest rank's compute) and the next busiest group's.
    auto groupOf = [&](std::size_t r) { return std::pair(tl.ranks[r].host, tl.ranks[r].stage); };
    struct Busiest {
        std::pair<int, int> group{-2, -2};
        double top = 0, next = 0;
    };
    std::vector<Busiest> busiest(K);
    for (std::size_t k = 0; k < K; ++k) {
        std::map<std::pair<int, int>, double> ofGroup;
        for (std::size_t r = 0; r < R; ++r)
            if (!std::isnan(value[r * K + k])) ofGroup[groupOf(r)] = std::max(ofGroup[groupOf(r)], value[r * K + k]);
        Busiest& b = busiest[k];
        for (const auto& [g, v] : ofGroup) {
            if (v > b.top) b = {g, v, b.top};
            else b.next = std::max(b.next, v);
        }
    }
    auto leadOf = [&](std::size_t r, std::size_t k) {
        const double own = value[r * K + k];
        const Busiest& b = busiest[k];
        if (std::isnan(own) || groupOf(r) != b.group || !(own > b.next) || b.next <= 0) return kNaN;
        return own - b.next;
    };
    // Expert lateness stands out against the job's own spread of it too (robust z over every member and step):
    // with 30% jitter per op and a dozen exchanges a step, an EP group's last member is a different one each
    // step, up to a fifth of the interval late (a clean EP 3 draw, 300186, had five one-step slow ranks).
    double lateBar = p.minLateShare;
    {
        std::vector<double> shares;
        for (double x : late.raw)
            if (!std::isnan(x)) shares.push_back(x);
        if (shares.size() >= 8) {
            const RobustStats st = robustStats(shares);
            lateBar = std::max(lateBar, st.median + p.kSigma * st.sigma);
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
            const bool slowCompute = !std::isnan(ratio[r * K + k]) && ratio[r * K + k] >= rankBar &&
                                     z[r * K + k] >= p.kSigma;
            const bool lagging = lagFloor > 0 && double(rt.stepStats[k].dpStartLagNs) > lagFloor;
            const bool lateExpert = late.share[r * K + k] >= lateBar; // NaN: not measured
            const unsigned signals = (slowCompute ? kCompute : 0u) | (lagging ? kLag : 0u) | (lateExpert ? kLate : 0u);
            if (signals) flagged[{rt.host >= 0 ? rt.host : -1 - int(r), rt.stage}][int(k)].push_back({r, signals});
        }
    }
    for (const auto& [key, bySteps] : flagged) {
        std::vector<int> steps;
        for (const auto& [k, ranks] : bySteps) steps.push_back(k);
        for (const Episode& e : episodesOf(steps, p.maxEpisodeGap)) {
            std::map<std::size_t, int> hits;
            std::vector<double> ratios, own, peers, lags, lateNs, lateShares, lateSums;
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
                        lateSums.push_back(late.sumNs[i]);
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
            // A single step flagged on compute alone stands out by five sigmas, not four: a job's ranks and steps
            // make hundreds of comparisons, and a four-sigma step of one of them is chance (one clean run in 20
            // of megatron-8 had a 1.10x stage-0 step at a 1.095x bar).
            if (e.first == e.last && lags.empty() && lateNs.empty() && r < 1.0 + 1.25 * (rankBar - 1.0)) continue;
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
                // Its group waits for it at every exchange: what it would save a step is what they waited there
                // (a GPU slow all run makes no step longer than the usual one, which the steps' excess sees).
                f.savesMsPerStep = medianOf(lateSums) / 1e6;
            } else {
                f.message = "slow rank: " + who + stage + (many ? " start" : " starts") +
                            " the gradient sync up to " + ms(lag) + " after the rest of " + (many ? "their" : "its") +
                            " DP group in " + stepRange(f.firstStep, f.lastStep);
            }
            // In a job whose ranks' work varies widely (the job's own spread set the bar), what the rest of the job
            // did not wait for is not what makes it slow: a rank whose fix would save less than a hundredth of a
            // step (its peers nearly as slow that step) is no finding there. (Named by its timing alone, its cost
            // is the steps' excess: assignCosts.)
            if (!ratios.empty()) {
                auto extraAt = [&](std::size_t i) {
                    return !std::isnan(value[i]) && !std::isnan(peerMedian[i]) ? value[i] - peerMedian[i] : kNaN;
                };
                auto impliedAt = [&](std::size_t i) { // the span from its step's start to its sync, at its ratio
                    const RankStepStats& ss = tl.ranks[i / K].stepStats[i % K];
                    if (std::isnan(ratio[i]) || ratio[i] <= 1.0 || ss.dpStartNs == RankStepStats::kNoTime) return kNaN;
                    return std::max(0.0, double(ss.dpStartNs - tl.steps[i % K].startNs)) * (1.0 - 1.0 / ratio[i]);
                };
                auto leadAt = [&](std::size_t i) { return leadOf(i / K, i % K); };
                f.savesMsPerStep = savedPerStep(tl, best, e, extraAt, impliedAt, leadAt) / 1e6;
                if (wideSpread && f.savesMsPerStep * 1e6 < p.minSavedShare * double(sd.medianStepNs)) continue;
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

} // namespace prism::diag
