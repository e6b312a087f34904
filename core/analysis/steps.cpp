#include "analysis/steps.h"

#include "analysis/exchanges.h"

#include "analysis/drains.h"
#include "analysis/job_index.h"
#include "analysis/stats.h"
#include "util/parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace prism {

namespace {

using Piece = std::pair<std::int64_t, std::int64_t>;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::uint64_t pairKey(std::uint32_t a, std::uint32_t b) {
    return (std::uint64_t(std::min(a, b)) << 32) | std::max(a, b);
}

// One record of the series the steps are cut from (sender and receiver: job-local indices).
using SyncRec = DpRecord;

// A sender's records in one sync burst, as one: the earliest start and the latest end (`burst`: its index).
struct BurstSend {
    std::int64_t s, e;
    std::int32_t src;
    std::uint32_t burst;
};

constexpr const char* kAllThroughNote = "data-parallel traffic runs all through each step (expert all-to-all, or "
                                        "ZeRO-3 parameter gathers): steps end at the job-wide quiet of the optimizer";

// Where a step ends inside round piece `piece` (choosePeriodicCuts: the reduce-scatter after the last backward,
// which the optimizer's short quiet may have joined to the next step's first gathers): at the piece's longest
// quiet when it stands out (four times the next longest, and a boundary's length), else at the piece's end.
std::int64_t firstBurstEnd(const Piece& piece, const std::vector<Piece>& jobPieces, const StepParams& params) {
    if (jobPieces.empty()) return piece.second;
    auto it = std::upper_bound(jobPieces.begin(), jobPieces.end(), piece.first,
                               [](std::int64_t v, const Piece& x) { return v < x.first; });
    if (it != jobPieces.begin()) --it;
    std::int64_t longest = 0, second = 0, endBefore = piece.second;
    for (; it + 1 < jobPieces.end() && (it + 1)->first <= piece.second; ++it) {
        const std::int64_t quiet = (it + 1)->first - std::max(it->second, piece.first);
        if (it->second < piece.first) continue;
        if (quiet > longest) {
            second = longest;
            longest = quiet;
            endBefore = it->second;
        } else {
            second = std::max(second, quiet);
        }
    }
    return longest >= params.minBoundaryGapNs && longest >= 4 * second ? endBefore : piece.second;
}

// The all-gather starts of rings that found theirs (splitDistributedOptimizer), per ring with its PP stage.
struct RingStarts {
    int stage;
    std::vector<std::int64_t> starts; // by time
};

// The all-gather starts that a ring of PP stage `stage` may be cut at: those of rings of other stages (rings of
// one stage sync together anyway, their reduce-scatter buckets too), each kept where it starts together with
// one in at least half of the rings of yet other stages that found theirs (after the optimizer every ring's
// all-gather starts at once; a ring that took expert all-to-all or bucket lulls for all-gathers has them
// elsewhere). Sorted.
std::vector<std::int64_t> startsForStage(const std::vector<RingStarts>& rings, int stage, std::int64_t windowNs) {
    std::vector<std::int64_t> out;
    for (const RingStarts& g : rings) {
        if (g.stage == stage) continue;
        for (std::int64_t s : g.starts) {
            std::size_t others = 0, with = 0;
            for (const RingStarts& h : rings) {
                if (h.stage == g.stage) continue;
                ++others;
                auto it = std::lower_bound(h.starts.begin(), h.starts.end(), s - windowNs);
                with += it != h.starts.end() && *it <= s + windowNs;
            }
            if (2 * with >= others) out.push_back(s);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Steps as the period of the rounds' gaps (choosePeriodicCuts) where no coarser rhythm stood out by its quiet:
// replaces `ends` and `syncStarts` and returns true when there is one.
bool periodicSteps(const std::vector<Piece>& roundPieces, const std::vector<Piece>& jobPieces,
                   const std::vector<std::int64_t>& fineEnds, const std::vector<std::int64_t>& fineStarts,
                   const StepParams& params, std::vector<std::int64_t>& ends, std::vector<std::int64_t>& syncStarts) {
    const std::vector<PeriodicCut> cuts = choosePeriodicCuts(roundPieces, params);
    if (cuts.empty()) return false;
    std::vector<std::int64_t> coarseEnds, coarseSync;
    for (const PeriodicCut& c : cuts) {
        const std::size_t last = c.atStart ? c.piece - 1 : c.piece; // the round the step ends in
        const std::int64_t end = c.atStart ? fineEnds[last] : firstBurstEnd(roundPieces[last], jobPieces, params);
        coarseEnds.push_back(end);
        coarseSync.push_back(std::min(fineStarts[last], end));
    }
    // The rounds after the last cut: the last step, when their activity lasts as long as the usual step's.
    std::vector<double> spans;
    for (std::size_t k = 1; k < coarseEnds.size(); ++k) spans.push_back(double(coarseEnds[k] - coarseEnds[k - 1]));
    if (double(fineEnds.back() - coarseEnds.back()) * params.regularBand >= medianOf(spans)) {
        coarseEnds.push_back(fineEnds.back());
        coarseSync.push_back(fineStarts.back());
    }
    ends = std::move(coarseEnds);
    syncStarts = std::move(coarseSync);
    return true;
}

} // namespace

bool StepDivision::isExchange(EndpointId src, EndpointId dst, std::int64_t alignedStartNs) const {
    if (expertPairs.empty()) return false;
    const ExpertPair key{std::min(src, dst), std::max(src, dst), 0};
    auto it = std::lower_bound(expertPairs.begin(), expertPairs.end(), key);
    if (it == expertPairs.end() || it->a != key.a || it->b != key.b) return false;
    const auto& w = syncWindowsNs[it->windows];
    auto next = std::upper_bound(w.begin(), w.end(), alignedStartNs,
                                 [](std::int64_t v, const Piece& x) { return v < x.first; });
    return next == w.begin() || alignedStartNs > std::prev(next)->second;
}

const char* stepSourceName(StepSource source) {
    switch (source) {
    case StepSource::None: return "none";
    case StepSource::DataParallel: return "DP sync bursts";
    case StepSource::Pipeline: return "PP traffic rhythm";
    }
    return "?";
}

StepDivision divideSteps(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                         const ParallelismResult& par, const StepParams& params, std::int64_t captureFirstNs,
                         const JobIndex* index) {
    StepDivision out;
    if (job.records.empty()) return out;
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    const std::size_t nics = ix.size();

    // The series the steps are cut from: the DP sync records, one DP group at a time (where the stages sync one
    // after another, below) or as one series; without DP sync, the PP records as one. Never held whole (but for
    // records that do not come by start, gathered and sorted below): a
    // report's analysis peaked on it (32 bytes a DP record, 84 MB for the 2.6M of `large`'s job-0). A group's
    // records are gathered when its turn comes (their positions in the job, grouped, 4 bytes each), a series of
    // the whole job is read from the job's records as they come (twice: its pieces, then each record's burst),
    // and once a record's burst is known only the union of each sender's records in each burst is kept (a
    // BurstSend): what follows takes per burst or round and sender the earliest start and the latest end, which
    // these give exactly.
    const bool recordsInOrder = recordsByStart(flows, job);
    // A DP record inside one DP group; a pipeline collective (tied embeddings) joins two groups and is no
    // group's sync.
    auto dpSync = [&](int a, int b) {
        return ix.kind(a, b) == PairKind::DP && ix.dpGroup(a) >= 0 && ix.dpGroup(a) == ix.dpGroup(b);
    };
    auto record = [&](std::uint32_t r, int a, int b, int group) {
        return SyncRec{flows.startNs[r], std::max(flows.end(r), flows.startNs[r]), a, b, group};
    };
    // take(position, r, a, b) for each record of the job at positions [from, to) between two of its NICs that is
    // DP sync (dp) or not.
    auto eachRecordIn = [&](bool dp, std::size_t from, std::size_t to, auto&& take) {
        for (std::size_t p = from; p < to; ++p) {
            const std::uint32_t r = job.records[p];
            const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
            if (a >= 0 && b >= 0 && dpSync(a, b) == dp) take(p, r, a, b);
        }
    };
    auto eachRecord = [&](bool dp, auto&& take) { eachRecordIn(dp, 0, job.records.size(), take); };
    // The passes that only gather read the job's records in parts side by side, one a core, each part into its own
    // tallies, joined in the parts' order: what one pass in order gives.
    const std::size_t parts = partsFor(job.records.size(), params.threads, 4096);
    auto partBegin = [&](std::size_t k) { return job.records.size() * k / parts; };
    auto inParts = [&](auto&& fn) {
        parallelFor(parts, unsigned(parts), [&](std::size_t k, unsigned) { fn(k, partBegin(k), partBegin(k + 1)); });
    };
    struct Tally {
        std::vector<std::size_t> groupCount; // per DP group
        std::size_t dpTotal = 0;
        int firstStage = -1;
        bool oneStage = true;
        DpLinks links;
    };
    std::vector<Tally> tallies(parts, Tally{{}, 0, -1, true, DpLinks(nics)});
    inParts([&](std::size_t k, std::size_t from, std::size_t to) {
        Tally& t = tallies[k];
        eachRecordIn(true, from, to, [&](std::size_t, std::uint32_t, int a, int b) {
            const std::size_t g = std::size_t(ix.dpGroup(a));
            if (g >= t.groupCount.size()) t.groupCount.resize(g + 1, 0);
            ++t.groupCount[g];
            ++t.dpTotal;
            if (t.firstStage < 0) t.firstStage = ix.stage(a);
            t.oneStage = t.oneStage && ix.stage(a) == t.firstStage;
            t.links.add(a, b, int(g));
        });
    });
    std::vector<std::size_t> groupEnd; // per DP group: its count, then (once grouped) one past its last position
    std::size_t dpTotal = 0;
    int firstStage = -1;
    bool oneStage = true;
    DpLinks dpLinks(nics);
    for (const Tally& t : tallies) {
        if (t.groupCount.size() > groupEnd.size()) groupEnd.resize(t.groupCount.size(), 0);
        for (std::size_t g = 0; g < t.groupCount.size(); ++g) groupEnd[g] += t.groupCount[g];
        dpTotal += t.dpTotal;
        if (t.firstStage >= 0) {
            if (firstStage < 0) firstStage = t.firstStage;
            oneStage = oneStage && t.oneStage && t.firstStage == firstStage;
        }
        dpLinks.append(t.links);
    }
    const bool mayExchange = dpLinks.mayHoldExchanges();
    {
        std::vector<std::vector<int>> peersOf(nics); // the same records, in the same order, as expertGroups reads
        dpLinks.eachLink([&](std::int32_t a, std::int32_t b, std::int32_t) { peersOf[std::size_t(a)].push_back(b); });
        out.expertGroups = expertGroupsOfPeers(peersOf);
    }
    // The positions of the DP records, group after group, each group in the job's order: wanted where the groups
    // are taken one at a time (their expert exchanges, or their own series).
    std::vector<std::uint32_t> grouped;
    if (mayExchange || !oneStage) {
        std::vector<std::size_t> at(groupEnd.size());
        for (std::size_t g = 0, sum = 0; g < groupEnd.size(); ++g) {
            at[g] = sum;
            sum += groupEnd[g];
            groupEnd[g] = sum;
        }
        grouped.resize(dpTotal);
        // Each part from where the parts before it end in each group.
        std::vector<std::vector<std::size_t>> partAt(parts, at);
        for (std::size_t k = 1; k < parts; ++k)
            for (std::size_t g = 0; g < at.size(); ++g)
                partAt[k][g] =
                    partAt[k - 1][g] + (g < tallies[k - 1].groupCount.size() ? tallies[k - 1].groupCount[g] : 0);
        inParts([&](std::size_t k, std::size_t from, std::size_t to) {
            std::vector<std::size_t>& next = partAt[k];
            eachRecordIn(true, from, to, [&](std::size_t p, std::uint32_t, int a, int) {
                grouped[next[std::size_t(ix.dpGroup(a))]++] = std::uint32_t(p);
            });
        });
    }
    std::vector<Tally>().swap(tallies);
    auto groupBegin = [&](std::size_t g) { return g == 0 ? std::size_t(0) : groupEnd[g - 1]; };
    if (!recordsInOrder) // each group by start, as exchanges are told and bursts cut
        for (std::size_t g = 0; g < groupEnd.size() && !grouped.empty(); ++g)
            std::stable_sort(grouped.begin() + std::ptrdiff_t(groupBegin(g)),
                             grouped.begin() + std::ptrdiff_t(groupEnd[g]), [&](std::uint32_t x, std::uint32_t y) {
                                 return flows.startNs[job.records[x]] < flows.startNs[job.records[y]];
                             });
    std::vector<SyncRec> buffer; // one group's records
    auto gather = [&](std::size_t g, const std::vector<bool>* skip, std::vector<SyncRec>& into) {
        into.clear();
        for (std::size_t i = groupBegin(g); i < groupEnd[g]; ++i) {
            const std::uint32_t p = grouped[i], r = job.records[p];
            if (!skip || !(*skip)[p]) into.push_back(record(r, ix.local(flows.src[r]), ix.local(flows.dst[r]), int(g)));
        }
    };
    // The expert exchanges leave the series, group by group (each group is judged by its own records); the ring's
    // hops among them rejoin their burst later, when they start inside one.
    std::vector<SyncRec> exchanges;
    std::vector<bool> isExchange; // per position in the job, where some record is one
    std::size_t series = dpTotal; // DP records left in the series
    bool onePhase = oneStage;     // every sender of the series of one PP stage
    if (mayExchange) {
        int stage = -1;
        onePhase = true;
        for (std::size_t g = 0; g < groupEnd.size(); ++g) {
            gather(g, nullptr, buffer);
            const std::vector<char> exchange = expertExchanges(buffer, nics, params.exchangeWindowNs);
            for (std::size_t i = 0; i < buffer.size(); ++i) {
                if (exchange[i]) {
                    if (isExchange.empty()) isExchange.assign(job.records.size(), false);
                    isExchange[grouped[groupBegin(g) + i]] = true;
                    exchanges.push_back(buffer[i]);
                    --series;
                } else {
                    if (stage < 0) stage = ix.stage(buffer[i].src);
                    onePhase = onePhase && ix.stage(buffer[i].src) == stage;
                }
            }
        }
    }
    const std::vector<bool>* skip = isExchange.empty() ? nullptr : &isExchange;
    std::vector<LinkRecord> links; // PP records between adjacent stages, for the drain test (no DP traffic only)
    if (series > 0) {
        out.source = StepSource::DataParallel;
    } else {
        // No DP sync (or every DP record an exchange): the PP rhythm.
        out.source = StepSource::Pipeline;
        const bool any = std::any_of(job.records.begin(), job.records.end(), [&](std::uint32_t r) {
            const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
            return a >= 0 && b >= 0 && !dpSync(a, b);
        });
        if (!any) return out;
        std::unordered_map<std::uint64_t, std::uint32_t> linkOf;
        const int last = par.pp - 1;
        auto addLink = [&](std::uint32_t r, int a, int b, bool closing) {
            const int sa = ix.stage(a), sb = ix.stage(b);
            const auto [it, added] =
                linkOf.try_emplace(pairKey(std::uint32_t(a), std::uint32_t(b)), std::uint32_t(linkOf.size()));
            const bool forward = closing ? sa == last : sb > sa;
            links.push_back({flows.startNs[r], std::max(flows.end(r), flows.startNs[r]), it->second,
                             forward ? 1 : -1, !closing && std::min(sa, sb) == 0});
        };
        // The pair that closes an interleaved ring (the last stage hands each micro-batch's next model chunk to
        // stage 0) is a link too, forward from the last stage: a gradient in flight on it alone, near the step's
        // end, is no drain. Not a tied-embedding ring's, which carries one all-reduce a step (under a quarter of a
        // chain link's records): always at rest, it once made half the links of a PP 3 job rest inside steps.
        // Its records are set apart in the same pass and merged in (both in start order) when there are enough.
        std::vector<std::uint32_t> closing;
        std::size_t chain = 0;
        for (std::uint32_t r : job.records) {
            const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
            if (a < 0 || b < 0) continue;
            const int sa = ix.stage(a), sb = ix.stage(b);
            if (last >= 2 && std::min(sa, sb) == 0 && std::max(sa, sb) == last) closing.push_back(r);
            if (std::abs(sa - sb) != 1) continue;
            ++chain;
            addLink(r, a, b, false);
        }
        if (!closing.empty() && 4 * closing.size() * std::size_t(std::max(1, last)) >= chain) {
            const std::size_t mid = links.size();
            for (std::uint32_t r : closing) addLink(r, ix.local(flows.src[r]), ix.local(flows.dst[r]), true);
            std::inplace_merge(links.begin(), links.begin() + std::ptrdiff_t(mid), links.end(),
                               [](const LinkRecord& x, const LinkRecord& y) { return x.s < y.s; });
        }
        auto byStartOf = [](const LinkRecord& x, const LinkRecord& y) { return x.s < y.s; };
        if (!std::is_sorted(links.begin(), links.end(), byStartOf))
            std::stable_sort(links.begin(), links.end(), byStartOf);
    }

    // 1. Bursts per group: the union of the group's records in pieces, cut into bursts by the group's rhythm.
    struct Burst {
        std::int64_t s, e;
        int group;
        bool opener; // a distributed optimizer's parameter all-gather: part of the next step, no step end
    };
    std::vector<Burst> bursts;
    std::vector<BurstSend> sends;
    DrainScan drains; // PP only: where the pipeline is at rest
    // `each(f)` calls f(s, e, sender) for each record of the group's series by start, twice: once for the
    // pieces, then for each record's burst.
    std::vector<std::uint32_t> sendOf(nics, std::numeric_limits<std::uint32_t>::max()); // per sender: its last
    auto cutSeries = [&](int group, auto&& each, std::vector<Burst>& toBursts, std::vector<BurstSend>& toSends,
                         std::vector<std::uint32_t>& lastSend, const std::vector<std::int64_t>* openerStarts) {
        std::vector<Piece> pieces;
        each([&](std::int64_t s, std::int64_t e, int) {
            if (pieces.empty() || s > pieces.back().second) pieces.push_back({s, e});
            else pieces.back().second = std::max(pieces.back().second, e);
        });
        if (pieces.empty()) return;
        if (out.source == StepSource::DataParallel) joinLulls(pieces);
        std::vector<std::size_t> cuts = out.source == StepSource::DataParallel
                                            ? chooseCuts(pieces, params, 0.5, false, true)
                                            : choosePipelineCuts(pieces, links, params, &drains);
        std::vector<char> openerBurst; // per burst of this group: a parameter all-gather that opens a step
        if (out.source == StepSource::DataParallel) splitDistributedOptimizer(pieces, cuts, openerBurst, params);
        if (openerStarts)
            splitAtOtherOpeners(pieces, cuts, openerBurst, *openerStarts,
                                params.maxClockOffsetNs + params.minBoundaryGapNs, params);
        std::vector<std::uint32_t> burstOfPiece(pieces.size());
        const std::uint32_t base = std::uint32_t(toBursts.size());
        std::size_t c = 0;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const std::uint32_t id = base + std::uint32_t(c);
            if (id == toBursts.size())
                toBursts.push_back(
                    {pieces[i].first, pieces[i].second, group, c < openerBurst.size() && openerBurst[c] != 0});
            toBursts[id].e = std::max(toBursts[id].e, pieces[i].second);
            burstOfPiece[i] = id;
            if (c < cuts.size() && cuts[c] == i) ++c;
        }
        // A record lies in the last piece that starts at or before it (a piece opens with the first record past
        // the one before); bursts come in order, so a sender's send in the burst is its last one.
        std::size_t p = 0;
        each([&](std::int64_t s, std::int64_t e, int src) {
            while (p + 1 < pieces.size() && pieces[p + 1].first <= s) ++p;
            const std::uint32_t id = burstOfPiece[p];
            std::uint32_t& at = lastSend[std::size_t(src)];
            if (at < toSends.size() && toSends[at].burst == id) {
                toSends[at].s = std::min(toSends[at].s, s);
                toSends[at].e = std::max(toSends[at].e, e);
            } else {
                at = std::uint32_t(toSends.size());
                toSends.push_back({s, e, src, id});
            }
        });
    };
    auto eachOf = [](const std::vector<SyncRec>& v) {
        return [&v](auto&& f) {
            for (const SyncRec& x : v) f(x.s, x.e, x.src);
        };
    };
    const bool dp = out.source == StepSource::DataParallel;
    if (dp && !onePhase) {
        // With a pipeline the stages sync one after another (the last stage first), so each ring is cut on its
        // own.
        // The groups side by side, a thread a group at a time, each into bursts and sends of its own (a sender is
        // of one group), joined in the groups' order: what cutting them one after another gives.
        struct Cut {
            std::vector<Burst> bursts;
            std::vector<BurstSend> sends;
        };
        std::vector<Cut> cut(groupEnd.size());
        const unsigned threads = unsigned(std::min<std::size_t>(threadCount(params.threads), dpTotal / 4096 + 1));
        std::vector<std::vector<SyncRec>> buffers(threads);
        std::vector<std::vector<std::uint32_t>> lastSends(threads);
        std::vector<int> stageOf(groupEnd.size(), -1);
        auto cutGroups = [&](const std::vector<std::size_t>& which,
                             const std::vector<std::vector<std::int64_t>>* openerStarts) {
            parallelFor(which.size(), threads, [&](std::size_t k, unsigned worker) {
                const std::size_t g = which[k];
                std::vector<SyncRec>& records = buffers[worker];
                gather(g, skip, records); // (each group's positions are by start)
                if (!records.empty()) stageOf[g] = ix.stage(records.front().src);
                std::vector<std::uint32_t>& last = lastSends[worker];
                last.assign(nics, std::numeric_limits<std::uint32_t>::max());
                cut[g] = {};
                cutSeries(int(g), eachOf(records), cut[g].bursts, cut[g].sends, last,
                          openerStarts ? &(*openerStarts)[g] : nullptr);
            });
        };
        std::vector<std::size_t> all(groupEnd.size());
        std::iota(all.begin(), all.end(), std::size_t(0));
        cutGroups(all, nullptr);
        // Rings whose all-gathers did not part from their reduce-scatters are cut again where the other rings'
        // began (splitAtOtherOpeners).
        std::vector<std::size_t> without;
        std::vector<RingStarts> rings;
        for (std::size_t g = 0; g < cut.size(); ++g) {
            RingStarts r{stageOf[g], {}};
            for (const Burst& b : cut[g].bursts)
                if (b.opener) r.starts.push_back(b.s);
            if (r.starts.empty()) without.push_back(g);
            else rings.push_back(std::move(r));
        }
        // Most rings found their all-gathers (a ring that did not is the exception the others explain).
        if (!rings.empty() && rings.size() >= without.size()) {
            std::vector<std::vector<std::int64_t>> hints(cut.size());
            std::map<int, std::vector<std::int64_t>> ofStage; // the same for every ring of a stage
            for (std::size_t g : without) {
                auto it = ofStage.find(stageOf[g]);
                if (it == ofStage.end())
                    it = ofStage.emplace(stageOf[g], startsForStage(rings, stageOf[g], params.maxClockOffsetNs +
                                                                                           params.minBoundaryGapNs)).first;
                hints[g] = it->second;
            }
            cutGroups(without, &hints);
        }
        for (Cut& c : cut) {
            const std::uint32_t base = std::uint32_t(bursts.size());
            bursts.insert(bursts.end(), c.bursts.begin(), c.bursts.end());
            for (BurstSend& x : c.sends) x.burst += base;
            sends.insert(sends.end(), c.sends.begin(), c.sends.end());
            c = {};
        }
        std::vector<SyncRec>().swap(buffer);
    } else {
        // Without a pipeline every ring syncs in the same phase, after the backward pass, and the job-wide quiet
        // time between syncs is the forward pass: the syncs of all rings are cut as one series. Per ring, a ring
        // slowed by a slow link (a NIC fallen back from 200 to 25 Gb/s) stretches its sync until its own rhythm
        // cuts it apart (`pure-dp` with an 8x slow link: as few as 16 of 20 steps found, up to 10 spurious).
        // Without DP sync, the PP records are the one series.
        std::vector<SyncRec>().swap(buffer);
        if (recordsInOrder) {
            cutSeries(
                0,
                [&](auto&& f) {
                    eachRecord(dp, [&](std::size_t p, std::uint32_t r, int a, int) {
                        if (!skip || !(*skip)[p]) f(flows.startNs[r], std::max(flows.end(r), flows.startNs[r]), a);
                    });
                },
                bursts, sends, sendOf, nullptr);
        } else { // records not by start: the series gathered and sorted
            std::vector<SyncRec> all;
            eachRecord(dp, [&](std::size_t p, std::uint32_t r, int a, int b) {
                if (!skip || !(*skip)[p]) all.push_back(record(r, a, b, 0));
            });
            std::stable_sort(all.begin(), all.end(), [](const SyncRec& x, const SyncRec& y) { return x.s < y.s; });
            cutSeries(0, eachOf(all), bursts, sends, sendOf, nullptr);
        }
        // One series of the ring's syncs: its exchanges are of it too.
        if (dp)
            for (SyncRec& r : exchanges) r.group = 0;
    }
    std::vector<std::uint32_t>().swap(grouped);
    std::vector<bool>().swap(isExchange);
    std::vector<std::uint32_t>().swap(sendOf);
    // Records of expert pairs that start inside a sync burst of their group, give or take a boundary gap (for
    // clock skew, and for the next active-timeout piece of a hop whose own record on a one-way pair was lost),
    // are the ring's hops on those pairs: they rejoin their burst, and may end it. They are taken by start, so
    // a hop's pieces extend the burst one after the other. (Steps cut from the PP rhythm have no ring: there every
    // DP record is an exchange, and none joins a PP burst.)
    if (!exchanges.empty() && dp) {
        std::stable_sort(exchanges.begin(), exchanges.end(), [](const SyncRec& x, const SyncRec& y) {
            return std::pair(x.group, x.s) < std::pair(y.group, y.s);
        });
        std::vector<std::uint32_t> byGroup(bursts.size()); // bursts by group, then start
        std::iota(byGroup.begin(), byGroup.end(), 0u);
        std::stable_sort(byGroup.begin(), byGroup.end(), [&](std::uint32_t x, std::uint32_t y) {
            return std::pair(bursts[x].group, bursts[x].s) < std::pair(bursts[y].group, bursts[y].s);
        });
        for (const SyncRec& r : exchanges) {
            auto it = std::upper_bound(byGroup.begin(), byGroup.end(), std::pair(r.group, r.s + params.minBoundaryGapNs),
                                       [&](const std::pair<int, std::int64_t>& v, std::uint32_t id) {
                                           return v < std::pair(bursts[id].group, bursts[id].s);
                                       });
            if (it == byGroup.begin()) continue;
            const std::uint32_t id = *std::prev(it);
            if (bursts[id].group != r.group || r.s > bursts[id].e + params.minBoundaryGapNs) continue;
            sends.push_back({r.s, r.e, r.src, id});
            bursts[id].e = std::max(bursts[id].e, r.e);
        }
    }
    // Every sync burst with its sends, openers included, for the sync windows of isExchange (below).
    const std::vector<BurstSend> allSends = exchanges.empty() ? std::vector<BurstSend>{} : sends;
    const std::vector<Burst> allBursts = exchanges.empty() ? std::vector<Burst>{} : bursts;

    // The all-gathers that open steps end none: their sends and bursts leave the sync series.
    if (std::any_of(bursts.begin(), bursts.end(), [](const Burst& b) { return b.opener; })) {
        std::vector<std::uint32_t> newId(bursts.size());
        std::vector<Burst> kept;
        for (std::size_t id = 0; id < bursts.size(); ++id) {
            newId[id] = std::uint32_t(kept.size());
            if (!bursts[id].opener) kept.push_back(bursts[id]);
        }
        std::size_t w = 0;
        for (const BurstSend& x : sends)
            if (!bursts[x.burst].opener) {
                sends[w] = x;
                sends[w++].burst = newId[x.burst];
            }
        sends.resize(w);
        bursts = std::move(kept);
        out.notes.push_back("two DP collectives per step (a distributed optimizer: gradient reduce-scatter, then "
                            "parameter all-gather): steps end with the reduce-scatter, the all-gather opens the "
                            "next step");
    }

    // 2. Rounds: a group syncs once per round and rounds are apart by the inter-step quiet time. The first
    // pass opens a round when a group repeats; its quiet gaps give the scale for the second pass, which also
    // opens a round on a long quiet gap (a group that missed a round) and keeps a group's split burst whole.
    std::vector<std::uint32_t> byStart(bursts.size());
    std::iota(byStart.begin(), byStart.end(), 0u);
    std::stable_sort(byStart.begin(), byStart.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return bursts[x].s < bursts[y].s; });
    int groups = 0;
    for (const Burst& b : bursts) groups = std::max(groups, b.group + 1);
    std::vector<std::uint32_t> roundOf(bursts.size());
    // A group's burst that follows its previous one by less than a fifth of the group's usual gap between
    // bursts is that burst cut in two (a ring slowed by a slow link waits for its slowest hop between buckets):
    // no repeat. Else one such split would open a round in the middle of another, and every later round
    // would hold the end of one step and the start of the next (the quiet between rounds lost).
    std::vector<double> splitGap(std::size_t(groups), 0.0);
    {
        std::vector<std::vector<double>> own(std::size_t(groups), std::vector<double>{});
        std::vector<std::int64_t> lastEnd(std::size_t(groups), kNever);
        for (std::uint32_t id : byStart) {
            const Burst& b = bursts[id];
            std::int64_t& last = lastEnd[std::size_t(b.group)];
            if (last != kNever) own[std::size_t(b.group)].push_back(double(b.s - last));
            last = std::max(last == kNever ? b.e : last, b.e);
        }
        for (std::size_t g = 0; g < own.size(); ++g) splitGap[g] = 0.2 * medianOf(own[g]);
    }
    auto formRounds = [&](double quietNs) {
        std::vector<int> lastRound(std::size_t(groups), -1);
        std::vector<std::int64_t> lastEnd(std::size_t(groups), 0);
        int cur = -1;
        std::int64_t curEnd = 0;
        std::vector<double> gaps;
        for (std::uint32_t id : byStart) {
            const Burst& b = bursts[id];
            const double g = cur < 0 ? 0.0 : double(b.s - curEnd);
            const bool repeat = cur >= 0 && lastRound[std::size_t(b.group)] == cur;
            bool open = cur < 0;
            if (quietNs <= 0) open = open || (repeat && double(b.s - lastEnd[std::size_t(b.group)]) >= splitGap[std::size_t(b.group)]);
            else open = open || g > 0.5 * quietNs || (repeat && g > 0.2 * quietNs);
            if (open) {
                if (cur >= 0) gaps.push_back(g);
                ++cur;
                curEnd = b.e;
            }
            curEnd = std::max(curEnd, b.e);
            lastRound[std::size_t(b.group)] = cur;
            lastEnd[std::size_t(b.group)] = std::max(lastEnd[std::size_t(b.group)], b.e);
            roundOf[id] = std::uint32_t(cur);
        }
        return gaps;
    };
    const double quiet = medianOf(formRounds(0));
    if (quiet >= double(params.minBoundaryGapNs)) formRounds(quiet);
    std::size_t rounds = 0;
    for (std::uint32_t r : roundOf) rounds = std::max<std::size_t>(rounds, r + 1);

    // Rounds that are one step's sync in pieces. Behind a 3x slow GPU the stages of a pipeline sync tens of
    // milliseconds apart (each half of the groups then forms a round: a 114 ms step found as 87 + 27 ms), and
    // a group whose sync waits in the middle can have its burst cut in two by its own rhythm (the tail then
    // opens a round). So a round that lies nearer to the previous round than to the next joins it when its
    // groups are all missing from that round (they complete it), or when it is at most half of the groups, all
    // of which already synced in that round (a tail).
    if (rounds >= 2 && groups >= 3) {
        std::vector<std::int64_t> rs(rounds, kNever), re(rounds, std::numeric_limits<std::int64_t>::min());
        std::vector<std::vector<char>> has(rounds, std::vector<char>(std::size_t(groups), 0));
        for (std::size_t id = 0; id < bursts.size(); ++id) {
            const std::size_t r = roundOf[id];
            rs[r] = std::min(rs[r], bursts[id].s);
            re[r] = std::max(re[r], bursts[id].e);
            has[r][std::size_t(bursts[id].group)] = 1;
        }
        std::vector<std::uint32_t> into(rounds);
        std::uint32_t kept = 0;
        std::int64_t keptEnd = 0;
        std::vector<char> keptHas;
        for (std::size_t r = 0; r < rounds; ++r) {
            int members = 0, repeats = 0, keptMembers = 0;
            for (int g = 0; g < groups; ++g) {
                const bool inKept = r > 0 && keptHas[std::size_t(g)];
                keptMembers += inKept;
                if (has[r][std::size_t(g)]) {
                    ++members;
                    repeats += inKept;
                }
            }
            const std::int64_t toNext = r + 1 < rounds ? rs[r + 1] - re[r] : std::numeric_limits<std::int64_t>::max();
            const bool completes = repeats == 0 && keptMembers < groups;
            const bool tail = repeats == members && 2 * members <= groups;
            if (r > 0 && (completes || tail) && rs[r] - keptEnd < toNext) {
                into[r] = kept;
                keptEnd = std::max(keptEnd, re[r]);
                for (int g = 0; g < groups; ++g) keptHas[std::size_t(g)] |= has[r][std::size_t(g)];
                continue;
            }
            into[r] = kept = r == 0 ? 0 : kept + 1;
            keptEnd = re[r];
            keptHas = has[r];
        }
        for (std::uint32_t& r : roundOf) r = into[r];
        rounds = std::size_t(kept) + 1;
    }

    // 3. Clock alignment: per round and PP stage, each NIC's first sync send; NICs of one stage start
    // together, so a NIC's lag behind the stage median is its exporter's clock offset (pooled per leaf).
    std::vector<std::int64_t> nicOffset(nics, 0);
    if (params.alignClocks && rounds > 0) {
        std::vector<std::int64_t> first(rounds * nics, kNever);
        for (const BurstSend& x : sends) {
            std::int64_t& f = first[roundOf[x.burst] * nics + std::size_t(x.src)];
            f = std::min(f, x.s);
        }
        int stages = 1;
        for (std::size_t l = 0; l < nics; ++l) stages = std::max(stages, ix.stage(int(l)) + 1);
        // Key of the clock a NIC's records are stamped with: its leaf, else the NIC itself.
        auto clockKey = [&](std::size_t l) { return ix.leaf(int(l)) >= 0 ? ix.leaf(int(l)) : -1 - int(l); };
        std::unordered_map<int, std::vector<double>> deviations;
        std::vector<double> vals;
        for (std::size_t r = 0; r < rounds; ++r) {
            for (int st = 0; st < stages; ++st) {
                // Relative to the earliest start: epoch nanoseconds do not fit a double's 53 bits.
                vals.clear();
                std::int64_t base = kNever;
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st) base = std::min(base, first[r * nics + l]);
                if (base == kNever) continue;
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st && first[r * nics + l] != kNever)
                        vals.push_back(double(first[r * nics + l] - base));
                if (vals.size() < 2) continue;
                const double ref = medianOf(vals);
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st && first[r * nics + l] != kNever)
                        deviations[clockKey(l)].push_back(double(first[r * nics + l] - base) - ref);
            }
        }
        std::unordered_map<int, std::int64_t> offsetOfKey;
        for (auto& [key, dev] : deviations) {
            if (dev.size() < 3) continue;
            const double m = medianOf(std::move(dev));
            if (std::fabs(m) <= double(params.maxClockOffsetNs)) offsetOfKey[key] = std::llround(m);
        }
        bool any = false;
        for (std::size_t l = 0; l < nics; ++l) {
            auto it = offsetOfKey.find(clockKey(l));
            if (it != offsetOfKey.end()) nicOffset[l] = it->second;
            any = any || nicOffset[l] != 0;
        }
        if (any) {
            out.clockOffsetNs.assign(flows.endpoints.size(), 0);
            for (std::size_t l = 0; l < nics; ++l) out.clockOffsetNs[ix.endpoint(int(l))] = nicOffset[l];
        }
    }

    // The ring's sync bursts of the groups whose expert exchanges left the series, aligned, for isExchange (none
    // without a ring: every record of an expert pair is an exchange).
    if (!exchanges.empty()) {
        std::vector<Piece> window(allBursts.size(), {kNever, std::numeric_limits<std::int64_t>::min()});
        for (const BurstSend& x : allSends) {
            const std::int64_t off = nicOffset[std::size_t(x.src)];
            Piece& w = window[x.burst];
            w.first = std::min(w.first, x.s - off - params.minBoundaryGapNs);
            w.second = std::max(w.second, x.e - off);
        }
        std::unordered_map<int, std::uint32_t> slot; // burst group -> syncWindowsNs index
        std::unordered_set<std::uint64_t> seen;       // pairs (a pair lies in one group)
        for (const SyncRec& r : exchanges) {
            const auto [it, added] = slot.try_emplace(r.group, std::uint32_t(slot.size()));
            if (!seen.insert(pairKey(std::uint32_t(r.src), std::uint32_t(r.dst))).second) continue;
            const EndpointId a = ix.endpoint(r.src), b = ix.endpoint(r.dst);
            out.expertPairs.push_back({std::min(a, b), std::max(a, b), it->second});
        }
        std::sort(out.expertPairs.begin(), out.expertPairs.end());
        out.expertPairs.erase(std::unique(out.expertPairs.begin(), out.expertPairs.end()), out.expertPairs.end());
        out.syncWindowsNs.resize(slot.size());
        for (std::size_t id = 0; id < allBursts.size(); ++id) {
            auto it = slot.find(allBursts[id].group);
            if (dp && it != slot.end() && window[id].first != kNever)
                out.syncWindowsNs[it->second].push_back(window[id]);
        }
        for (auto& w : out.syncWindowsNs) std::sort(w.begin(), w.end());
        out.notes.push_back(dp ? "expert all-to-all between DP peers is told from the gradient sync (a ring's hops go "
                                 "one way, to one peer at a time; exchanges go both ways, to several peers at once): "
                                 "steps end with the ring's sync"
                               : "the traffic between DP peers is expert all-to-all alone (no gradient sync on the "
                                 "network): steps follow the pipeline");
    }

    // 4. Step ends: the latest aligned sync end of each round (and its first sync start), by end.
    auto roundBounds = [&](const std::vector<std::uint32_t>& of, std::vector<std::int64_t>& end,
                           std::vector<std::int64_t>& start) {
        std::size_t count = 0;
        for (std::uint32_t r : of) count = std::max<std::size_t>(count, r + 1);
        std::vector<std::int64_t> roundEnd(count, std::numeric_limits<std::int64_t>::min());
        std::vector<std::int64_t> roundStart(count, kNever);
        for (const BurstSend& x : sends) {
            const std::size_t r = of[x.burst];
            const std::int64_t off = nicOffset[std::size_t(x.src)];
            roundEnd[r] = std::max(roundEnd[r], x.e - off);
            roundStart[r] = std::min(roundStart[r], x.s - off);
        }
        std::vector<std::size_t> ro(count);
        std::iota(ro.begin(), ro.end(), std::size_t(0));
        std::sort(ro.begin(), ro.end(), [&](std::size_t x, std::size_t y) { return roundEnd[x] < roundEnd[y]; });
        for (std::size_t r : ro) {
            if (!end.empty() && roundEnd[r] <= end.back()) continue; // a round inside the one before
            end.push_back(roundEnd[r]);
            start.push_back(roundStart[r]);
        }
    };
    std::vector<std::int64_t> ends, syncStarts;
    roundBounds(roundOf, ends, syncStarts);
    // The series is done with: what follows reads the job's records again (4b), so it is not held beside them.
    std::vector<SyncRec>().swap(exchanges);
    std::vector<BurstSend>().swap(sends);
    std::vector<std::uint32_t>().swap(roundOf);
    std::vector<LinkRecord>().swap(links);
    // Micro-batches still in flight after the last record: the capture ends inside that step.
    if (out.source == StepSource::Pipeline && !drains.share.empty() && drains.endShare < params.drainedShare &&
        ends.size() > 1) {
        ends.pop_back();
        syncStarts.pop_back();
    }

    // 4b. DP traffic all through the step (ZeRO-3 / FSDP parameter all-gathers and gradient reduce-scatters per
    // layer group; expert all-to-all between DP peers where it could not be told from the ring): the rounds
    // above follow that traffic's micro-batch or layer rhythm, and the step is a coarser rhythm over them. A
    // step ends with the job-wide quiet of the optimizer: after the last sync no record of the job is in
    // flight until the next step's first transfer. So each round is taken as a piece from the job's first
    // activity after the previous round end to its own end (the gap between pieces is the job-wide quiet that
    // follows a round), and chooseCoarseCuts keeps the rounds that end steps, or all of them.
    if (out.source == StepSource::DataParallel && ends.size() >= 4) {
        const std::vector<std::int64_t>& fineEnds = ends; // the rounds, until the coarse steps replace them
        const std::vector<std::int64_t>& fineStarts = syncStarts;
        // The union of the job's activity, aligned. Records come by start and only the NICs' clock offsets stir
        // them, so an aligned record starts at most the offsets' spread before the end of the pieces so far: it is
        // united with the last few of them (a short scan back), and nothing is sorted. The union is the same in any
        // order and however the records are split: from `splitUnionRecords` on, the two halves are united side by
        // side and their unions joined (on `large` half of job-0's 0.1 s here). Records that do not come by start
        // are sorted first.
        auto unite = [&](std::size_t from, std::size_t to, std::vector<Piece>& pieces, std::vector<Piece>& unsorted) {
            for (std::size_t q = from; q < to; ++q) {
                const std::uint32_t r = job.records[q];
                const int a = ix.local(flows.src[r]);
                if (a < 0 || ix.local(flows.dst[r]) < 0) continue; // storage, management: not the job's rhythm
                const std::int64_t off = nicOffset[std::size_t(a)];
                const Piece x{flows.startNs[r] - off, std::max(flows.end(r), flows.startNs[r]) - off};
                if (recordsInOrder) unitePiece(pieces, x);
                else unsorted.push_back(x);
            }
        };
        std::vector<Piece> jobPieces;
        std::vector<Piece> unsorted; // records not by start: sorted, then united
        const std::size_t n = job.records.size();
        if (recordsInOrder && n >= std::max<std::size_t>(2, params.splitUnionRecords)) {
            std::vector<Piece> later, none;
            Aside second([&] { unite(n / 2, n, later, none); });
            unite(0, n / 2, jobPieces, unsorted);
            second.wait();
            jobPieces = joinUnions(jobPieces, later);
        } else {
            unite(0, n, jobPieces, unsorted);
        }
        std::sort(unsorted.begin(), unsorted.end());
        for (const Piece& x : unsorted) unitePiece(jobPieces, x);
        std::vector<Piece>().swap(unsorted);
        auto piecesOf = [&](const std::vector<std::int64_t>& roundEnds) {
            std::vector<Piece> out;
            std::int64_t from = std::min(jobPieces.front().first, roundEnds.front());
            for (std::int64_t e : roundEnds) {
                out.push_back({std::max(from, out.empty() ? from : out.back().second), e});
                // The job's next activity: at once when a record is still in flight at e, else the next piece.
                auto next = std::upper_bound(jobPieces.begin(), jobPieces.end(), e,
                                             [](std::int64_t v, const Piece& x) { return v < x.first; });
                const bool busy = next != jobPieces.begin() && std::prev(next)->second > e;
                from = busy || next == jobPieces.end() ? e : next->first;
            }
            return out;
        };
        const std::vector<Piece> roundPieces = piecesOf(fineEnds);
        const std::vector<std::size_t> cuts = chooseCoarseCuts(roundPieces, params);
        if (cuts.empty()) {
            if (periodicSteps(roundPieces, jobPieces, fineEnds, fineStarts, params, ends, syncStarts))
                out.notes.push_back(kAllThroughNote);
        } else {
            std::vector<std::int64_t> coarseEnds, coarseSync;
            for (std::size_t c : cuts) {
                coarseEnds.push_back(fineEnds[c]);
                coarseSync.push_back(fineStarts[c]);
            }
            // The rounds after the last cut are the last step, or a step the capture (or a crash) cuts short:
            // kept when their activity lasts as long as the usual step's (within regularBand).
            std::vector<double> spans;
            for (std::size_t j = 1; j < cuts.size(); ++j)
                spans.push_back(double(fineEnds[cuts[j]] - roundPieces[cuts[j - 1] + 1].first));
            const double lastSpan = double(fineEnds.back() - roundPieces[cuts.back() + 1].first);
            if (spans.empty() || lastSpan * params.regularBand >= medianOf(spans)) {
                coarseEnds.push_back(fineEnds.back());
                coarseSync.push_back(fineStarts.back());
            }
            ends = std::move(coarseEnds);
            syncStarts = std::move(coarseSync);
            out.notes.push_back(kAllThroughNote);
        }
    }

    // 5. Step 0 starts at the job's first record; each step's first activity; traffic after the last end.
    const std::size_t K = ends.size();
    struct Activity {
        std::vector<std::int64_t> firstAct;
        std::int64_t jobFirst = kNever, trailingEnd = std::numeric_limits<std::int64_t>::min();
        std::size_t trailing = 0;
    };
    std::vector<Activity> activity(parts);
    inParts([&](std::size_t part, std::size_t from, std::size_t to) {
        Activity& act = activity[part];
        act.firstAct.assign(K, kNever);
        std::size_t k = 0; // the first end at or after each start (near the last record's)
        for (std::size_t p = from; p < to; ++p) {
            const std::uint32_t r = job.records[p];
            const int a = ix.local(flows.src[r]);
            const std::int64_t off = a >= 0 ? nicOffset[std::size_t(a)] : 0;
            const std::int64_t s = flows.startNs[r] - off;
            act.jobFirst = std::min(act.jobFirst, s);
            k = lowerBoundNear(ends, s, k);
            if (k < K) {
                act.firstAct[k] = std::min(act.firstAct[k], s);
            } else {
                ++act.trailing;
                act.trailingEnd = std::max(act.trailingEnd, flows.end(r) - off);
            }
        }
    });
    std::vector<std::int64_t> firstAct(K, kNever);
    std::int64_t jobFirst = kNever, trailingEnd = std::numeric_limits<std::int64_t>::min();
    std::size_t trailing = 0;
    for (const Activity& act : activity) {
        for (std::size_t k = 0; k < K; ++k) firstAct[k] = std::min(firstAct[k], act.firstAct[k]);
        jobFirst = std::min(jobFirst, act.jobFirst);
        trailing += act.trailing;
        trailingEnd = std::max(trailingEnd, act.trailingEnd);
    }
    for (std::size_t k = 0; k < K; ++k) {
        StepInfo st;
        st.index = int(k);
        st.startNs = k == 0 ? std::min(jobFirst, ends[0]) : ends[k - 1];
        st.endNs = ends[k];
        out.steps.push_back(st);
        out.firstActivityNs.push_back(firstAct[k] == kNever ? st.startNs : firstAct[k]);
        out.syncStartNs.push_back(std::max(syncStarts[k], st.startNs));
        out.syncEndNs.push_back(ends[k]);
    }
    std::vector<double> durations;
    for (std::size_t k = 1; k < K; ++k) durations.push_back(double(out.steps[k].durationNs()));
    out.medianStepNs = K > 1 ? std::llround(medianOf(durations)) : (K ? out.steps[0].durationNs() : 0);

    // 6. BOCD on the intervals between sync rounds: where the rhythm changes.
    out.changeProbability.assign(K, 0.0);
    if (durations.size() >= 4) {
        BocdParams bp = params.bocd;
        bp.segmentation = false;
        const BocdResult br = runBocd(durations, bp);
        for (std::size_t i = 1; i < durations.size(); ++i) out.changeProbability[i + 1] = br.cpProbability[i];
        for (std::size_t cp : br.changePoints) out.changePoints.push_back(cp + 1);
    }

    // Edges of the capture.
    if (K > 0 && ((captureFirstNs != 0 && jobFirst - captureFirstNs < 1'000'000) || drains.startsMidStep)) {
        out.firstStepCut = true;
        out.firstCutNote = int(out.notes.size());
        out.notes.push_back("the job was already running when the capture started: step 0 starts at its first "
                            "record and is partial");
    }
    if (trailing > 0 && K > 0 && trailingEnd - ends.back() > out.medianStepNs / 10) {
        out.lastStepCut = true;
        out.lastCutNote = int(out.notes.size());
        out.notes.push_back(std::to_string(trailing) + " records after the last gradient synchronization belong to "
                            "a step the capture does not finish; it is not reported");
    }
    if (out.source == StepSource::Pipeline && K > 0)
        out.notes.push_back("no data-parallel traffic on the network: steps follow the pipeline traffic rhythm "
                            "and end with the last PP transfer of each step");
    return out;
}

} // namespace prism
