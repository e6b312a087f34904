#include "analysis/timeline.h"

#include "analysis/job_index.h"
#include "analysis/stats.h"
#include "analysis/steps.h"
#include "util/memory.h"
#include "util/parallel.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_map>

#if defined(__SSE2__)
#include <emmintrin.h> // the scan for a pass's records
#endif

namespace prism {

namespace {

constexpr std::int64_t kMergeGapNs = 2'000; // records of one transfer: channels overlap, timeout splits touch
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kSyncSlackNs = 1'000; // a sync transfer starts at its round's first record or after
constexpr std::int64_t kBothWaysNs = 20'000;  // a collective's transfers both ways start this close

// One transfer on one rank: the records of one message (channels, active-timeout pieces) merged.
struct Transfer { // 32 bytes: a block of ranks holds some 20 MB of them on `large`
    std::int64_t s, e;
    std::uint64_t bytes;
    std::uint32_t peer;
    SegmentKind kind;
    bool exchange = false; // DP traffic that is an expert all-to-all, not the ring's sync (StepDivision::isExchange)
    std::uint16_t microBatch = kNoMicroBatch;
};
static_assert(sizeof(Transfer) == 32);

// The exporter's active timeout where it cuts the job's transfers into pieces (0: it does not): the duration a
// fifth of the records share within 2%, which (almost) no record passes (pieces of one timeout, the last piece
// shorter), from a sample of the records; and most such records are continued by a record of the same channel
// (sender, receiver, source port) that starts where they end (a job whose transfers all take the same time
// has such a duration too, and its records follow each other after compute). Records by start.
std::int64_t activeTimeoutOf(const FlowTable& flows, std::span<const std::uint32_t> records) {
    std::vector<std::int64_t> spans;
    const std::size_t stride = std::max<std::size_t>(1, records.size() / 65536);
    for (std::size_t q = 0; q < records.size(); q += stride)
        spans.push_back(flows.end(records[q]) - flows.startNs[records[q]]);
    if (spans.size() < 50) return 0;
    std::sort(spans.begin(), spans.end());
    const std::int64_t top = spans[spans.size() * 95 / 100];
    if (top <= 0) return 0;
    auto isFull = [top](std::int64_t d) { return std::llabs(d - top) <= top / 50; };
    const auto lo = std::lower_bound(spans.begin(), spans.end(), top - top / 50);
    const auto hi = std::upper_bound(spans.begin(), spans.end(), top + top / 50);
    if (5 * (hi - lo) < std::ptrdiff_t(spans.size()) || 100 * (spans.end() - hi) > std::ptrdiff_t(spans.size()))
        return 0;
    // Continued or not: the job's first records (a quarter million at most) by channel.
    std::unordered_map<std::uint64_t, std::int64_t> fullEnd; // channel -> end of its last whole-timeout record
    std::size_t full = 0, continued = 0;
    for (std::size_t q = 0; q < std::min<std::size_t>(records.size(), 1u << 18); ++q) {
        const std::uint32_t r = records[q];
        const std::uint64_t channel =
            std::uint64_t(flows.src[r]) << 40 ^ std::uint64_t(flows.dst[r]) << 16 ^ flows.srcPort[r];
        const std::int64_t s = flows.startNs[r], e = flows.end(r);
        auto it = fullEnd.find(channel);
        if (it != fullEnd.end()) {
            continued += std::llabs(s - it->second) <= kMergeGapNs;
            fullEnd.erase(it);
        }
        if (isFull(e - s)) {
            ++full;
            fullEnd[channel] = e;
        }
    }
    return 2 * continued >= full && full > 0 ? top : 0;
}

struct Busy {
    std::int64_t s, e;
    bool lead = false; // the first op after the step start or the DP sync (optimizer + forward)
};

JobTimeline build(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                  const ParallelismResult& par, const std::vector<StepInfo>& steps,
                  const std::vector<std::int64_t>& offsets, bool segments, const JobIndex* index,
                  const StepDivision* division, unsigned threadsWanted = 0, bool pack = false,
                  std::size_t blockRanks = 0) {
    JobTimeline tl;
    tl.steps = steps;
    tl.startNs = job.startNs;
    tl.endNs = job.endNs;
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    const std::size_t n = ix.size();

    std::vector<int> order(n);
    for (std::size_t l = 0; l < n; ++l) order[l] = int(l);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return std::pair(ix.stage(a), ix.dpGroup(a)) < std::pair(ix.stage(b), ix.dpGroup(b));
    });
    for (int l : order) {
        RankTimeline r;
        r.nic = ix.endpoint(l);
        r.ip = flows.endpoints.at(r.nic).toString();
        r.label = topology.rankLabel(flows.endpoints.at(r.nic));
        r.stage = ix.stage(l);
        r.dpGroup = std::max(0, ix.dpGroup(l));
        r.host = ix.host(l);
        tl.ranks.push_back(std::move(r));
    }
    const std::size_t R = tl.ranks.size();
    const std::size_t S = steps.size();

    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    auto times = [&](std::uint32_t r) __attribute__((always_inline)) {
        const std::int64_t off = flows.src[r] < offsets.size() ? offsets[flows.src[r]] : 0;
        const std::int64_t s = flows.startNs[r] - off;
        return std::pair(s, std::max(flows.end(r) - off, s + 1));
    };
    for (std::uint32_t r : job.records) {
        if (ix.local(flows.src[r]) < 0 || ix.local(flows.dst[r]) < 0) continue;
        const auto [s, e] = times(r);
        first = std::min(first, s);
        last = std::max(last, e);
    }
    const std::int64_t timeout = activeTimeoutOf(flows, job.records);
    // A record that starts one or two timeouts after a record of its channel (source port) in the stream's
    // transfer ended, where that one lasted the whole timeout, continues the transfer: the pieces between were
    // lost. (Else the transfer split in two where every channel lost its piece at once, and every later
    // transfer of the stream in the step took the next one's micro-batch.)
    auto continuesAfterLoss = [timeout](const auto& o, std::uint16_t port, std::int64_t s) {
        if (timeout <= 0) return false;
        for (const auto& [p, end] : o.full)
            for (std::int64_t lost = 1; lost <= 2; ++lost)
                if (p == port && end != 0 && std::llabs(s - end - lost * timeout) <= timeout / 50) return true;
        return false;
    };
    if (first <= last) {
        tl.startNs = std::min(first, S ? steps.front().startNs : first);
        tl.endNs = last;
    }

    // Transfers per rank, merged online: records come by start time, and within one (kind, peer) the clock
    // offset is the same, so a record either extends the last transfer of its (kind, peer) or starts one.
    // A rank's DP sync is one activity whichever ring neighbour a record is with: one stream for all peers.
    // A rank's transfers are needed only while its statistics and segments are made: the ranks go in blocks, the
    // records read once per block, so only a block's transfers are held.
    // A rank's latest transfer of each stream: (kind, exchange, peer) in one key, the peer 0 for a DP sync, so a
    // record finds its stream by one compare an entry. The stream's latest transfer is held in its entry, where the
    // records merge into it, and goes to its place in the list when the stream's next one begins (or the pass ends):
    // a merge into the list's entry missed the cache, one a record (`analyze large`: CPU 1.665 -> 1.615 s).
    struct Open {
        std::uint64_t key;
        std::size_t index; // the transfer's place in the rank's list
        Transfer t;
        // Its latest records that lasted a whole active timeout: (source port, end), a few channels' worth.
        std::array<std::pair<std::uint16_t, std::int64_t>, 4> full{};
        std::uint8_t nextFull = 0;
    };
    auto streamKey = [](SegmentKind kind, std::uint32_t peer, bool exchange) {
        return std::uint64_t(kind == SegmentKind::DpSync ? 0 : peer) | std::uint64_t(kind) << 32 |
               std::uint64_t(exchange) << 40;
    };
    const unsigned threads = threadCount(threadsWanted);
    // A report's statistics in quarters (at least 64 ranks): each pass reads its records' rows scattered over the
    // whole table, every column's cache lines once a pass, so fewer passes read less: on `large` 0.035 s (85 ms
    // of CPU) less than eighths for 5 MB more at the peak (7 MB on its first half); halves 60 MB more. (Eighths
    // had been 22 MB less than quarters for the same time, before the passes scanned their records 16 at a
    // time; sixteenths 4 MB less again for 10% more CPU; docs/BENCHMARKS.md. Blocks that take whole DP groups,
    // dealt out so that each holds every stage, held 5 MB less on `large` but took 6% more CPU: not kept.)
    // Segments need the compute before a DP sync, which its whole DP group sets (below): there the blocks end
    // only between groups (ranks go by stage, then DP group, so a group's ranks are side by side; where they are
    // not, one block), and each block's segments are made before the next block's transfers. Eighths there too
    // (the GUI on `large`: 13 MB less at its peak than quarters for 0.03 s more, now that a pass scans its
    // records 16 at a time; quarters were 0.4 s faster before; sixteenths 3 MB less again for 0.2 s more).
    const std::size_t block = blockRanks ? blockRanks : std::max<std::size_t>(64, segments ? (R + 7) / 8 : (R + 3) / 4);
    std::vector<std::size_t> cuts{0}; // blocks [cuts[b], cuts[b + 1])
    if (segments) {
        std::vector<std::size_t> lastOfGroup;
        for (std::size_t k = 0; k < R; ++k) {
            const auto g = std::size_t(tl.ranks[k].dpGroup);
            if (g >= lastOfGroup.size()) lastOfGroup.resize(g + 1, 0);
            lastOfGroup[g] = k;
        }
        std::size_t reach = 0; // the last rank of any group met so far
        for (std::size_t k = 0; k < R; ++k) {
            reach = std::max(reach, lastOfGroup[std::size_t(tl.ranks[k].dpGroup)]);
            if (reach == k && k + 1 - cuts.back() >= block && k + 1 < R) cuts.push_back(k + 1);
        }
    } else {
        for (std::size_t k = block; k < R; k += block) cuts.push_back(k);
    }
    cuts.push_back(R);
    const std::size_t blocks = cuts.size() - 1;
    std::size_t widest = 0;
    for (std::size_t b = 0; b < blocks; ++b) widest = std::max(widest, cuts[b + 1] - cuts[b]);
    // A rank's lists on cache lines of their own: the threads take alternate ranks, and with the lists' heads side
    // by side every transfer one thread began took the line of its neighbour's from the other (false sharing).
    struct alignas(64) RankLists {
        std::vector<Transfer> transfers;
        std::vector<Open> open;
    };
    std::vector<RankLists> lists(widest);
    // The transfers of ranks [lo, hi) (at lists[k - lo]); thread w takes the ranks k with k % threads == w,
    // each reading every record in order. Per endpoint its rank and the pass (block and thread) that takes it:
    // a record end is one load and compare per pass, for a job's records read by every pass.
    const std::size_t endpoints = flows.endpoints.size();
    std::vector<std::uint32_t> rankOfEndpoint(endpoints, kNoIndex), passOfEndpoint(endpoints, kNoIndex);
    for (std::size_t b = 0; b < blocks; ++b)
        for (std::size_t k = cuts[b]; k < cuts[b + 1]; ++k) {
            const EndpointId e = tl.ranks[k].nic;
            if (e >= endpoints) continue;
            rankOfEndpoint[e] = std::uint32_t(k);
            passOfEndpoint[e] = std::uint32_t(b * threads + k % threads);
        }
    // With several blocks of ranks, every pass reads the whole job: each record's two passes are looked up once,
    // in the job's record order, and a pass reads those alone to find its records (on `large` half of the
    // statistics' time went to reading every record's ends). Up to 16 passes (8 blocks on 2 cores) they are 4 bits
    // each, a byte a record; with more threads a byte each. A record with an end not the job's has the last pass
    // (15, or 255 that no pass has) for both ends: that pass reads and drops it.
    const std::size_t passCount = blocks * threads;
    const bool nibbles = passCount <= 16;
    std::vector<std::uint8_t> passes;
    if (blocks > 1 && passCount < 0xFF) {
        passes.resize(job.records.size() * (nibbles ? 1 : 2));
        for (std::size_t q = 0; q < job.records.size(); ++q) {
            const EndpointId ea = flows.src[job.records[q]], eb = flows.dst[job.records[q]];
            const bool both =
                ea < endpoints && eb < endpoints && rankOfEndpoint[ea] != kNoIndex && rankOfEndpoint[eb] != kNoIndex;
            const std::uint32_t pa = both ? passOfEndpoint[ea] : 0xFF, pb = both ? passOfEndpoint[eb] : 0xFF;
            if (nibbles) {
                passes[q] = std::uint8_t((pa & 0xF) | (pb & 0xF) << 4);
            } else {
                passes[2 * q] = std::uint8_t(pa);
                passes[2 * q + 1] = std::uint8_t(pb);
            }
        }
    }
    auto transfersOf = [&](std::size_t b) {
        const std::size_t lo = cuts[b], hi = cuts[b + 1];
        for (std::size_t k = lo; k < hi; ++k) {
            lists[k - lo].transfers.clear();
            lists[k - lo].open.clear();
        }
        parallelFor(threads, threads, [&](std::size_t w, unsigned) {
            // Inline in both places take calls it (as a call it took an eighth of a report's timeline on `large`).
            auto add = [&](std::uint32_t rank, SegmentKind kind, std::uint32_t peer, std::int64_t s, std::int64_t e,
                           std::uint64_t bytes, std::uint16_t port,
                           bool exchange = false) __attribute__((always_inline)) {
                RankLists& mine = lists[rank - lo];
                auto& list = mine.transfers;
                const std::uint64_t key = streamKey(kind, peer, exchange);
                for (Open& o : mine.open) {
                    if (o.key != key) continue;
                    Transfer& t = o.t;
                    if (s <= t.e + kMergeGapNs || continuesAfterLoss(o, port, s)) {
                        t.e = std::max(t.e, e);
                        t.s = std::min(t.s, s);
                        t.bytes += bytes;
                    } else {
                        list[o.index] = t;
                        o.index = list.size();
                        t = {s, e, bytes, peer, kind, exchange};
                        list.emplace_back();
                        o.full = {};
                    }
                    if (timeout > 0 && 50 * (e - s) >= 49 * timeout) o.full[o.nextFull++ % o.full.size()] = {port, e};
                    return;
                }
                mine.open.push_back({key, list.size(), {s, e, bytes, peer, kind, exchange}});
                if (timeout > 0 && 50 * (e - s) >= 49 * timeout) mine.open.back().full[0] = {port, e};
                list.emplace_back();
            };
            const std::uint32_t me = std::uint32_t(b * threads + w);
            const bool anyExchange = division && !division->expertPairs.empty();
            const std::uint32_t* const passOf = passOfEndpoint.data();
            const bool looked = !passes.empty();
            // Record q, with whether its source end (mineA) and destination end (mineB) are this pass's.
            auto take = [&](std::size_t q, bool mineA, bool mineB) {
                const std::uint32_t r = job.records[q];
                const EndpointId ea = flows.src[r], eb = flows.dst[r];
                if (ea >= endpoints || eb >= endpoints) return;
                if (!looked) {
                    mineA = passOf[ea] == me;
                    mineB = passOf[eb] == me;
                    if (!mineA && !mineB) return;
                }
                const std::uint32_t ra = rankOfEndpoint[ea], rb = rankOfEndpoint[eb];
                if (ra == kNoIndex || rb == kNoIndex) return; // the other end is not the job's
                const int a = ix.local(ea), b = ix.local(eb);
                const auto [s, e] = times(r);
                if (ix.kind(a, b) == PairKind::DP) {
                    const bool exchange = anyExchange && division->isExchange(flows.src[r], flows.dst[r], s);
                    if (mineA) add(ra, SegmentKind::DpSync, rb, s, e, flows.bytes[r], flows.srcPort[r], exchange);
                    if (mineB) add(rb, SegmentKind::DpSync, ra, s, e, flows.bytes[r], flows.srcPort[r], exchange);
                } else {
                    if (mineA) add(ra, SegmentKind::PpSend, rb, s, e, flows.bytes[r], flows.srcPort[r]);
                    if (mineB) add(rb, SegmentKind::PpRecv, ra, s, e, flows.bytes[r], flows.srcPort[r]);
                }
            };
            const std::size_t n = job.records.size();
            if (!looked) {
                for (std::size_t q = 0; q < n; ++q) take(q, false, false);
            } else if (nibbles) {
                // Most records are other passes' (a pass takes 2 ends in 16): the bytes are scanned 16 at a time
                // for either nibble equal to this pass (on `large` the scan was half of the stage's time).
                const std::uint8_t* const of = passes.data();
                std::size_t q = 0;
#if defined(__SSE2__)
                const __m128i low = _mm_set1_epi8(0x0F), mine = _mm_set1_epi8(char(me));
                for (; q + 16 <= n; q += 16) {
                    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(of + q));
                    const __m128i a = _mm_cmpeq_epi8(_mm_and_si128(v, low), mine);
                    const __m128i b = _mm_cmpeq_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), low), mine);
                    for (unsigned m = unsigned(_mm_movemask_epi8(_mm_or_si128(a, b))); m; m &= m - 1) {
                        const std::size_t at = q + std::size_t(__builtin_ctz(m));
                        take(at, (of[at] & 0xF) == me, of[at] >> 4 == me);
                    }
                }
#endif
                for (; q < n; ++q) {
                    const bool mineA = (of[q] & 0xF) == me, mineB = of[q] >> 4 == me;
                    if (mineA || mineB) take(q, mineA, mineB);
                }
            } else {
                for (std::size_t q = 0; q < n; ++q) {
                    const bool mineA = passes[2 * q] == me, mineB = passes[2 * q + 1] == me;
                    if (mineA || mineB) take(q, mineA, mineB);
                }
            }
            for (std::size_t k = lo; k < hi; ++k) // the open transfers to their places
                if (k % threads == w)
                    for (const Open& o : lists[k - lo].open) lists[k - lo].transfers[o.index] = o.t;
        });
    };

    // Per rank: steps, micro-batches, busy times before sends and before the DP sync.
    for (RankTimeline& r : tl.ranks) r.stepStats.assign(S, {});
    std::vector<std::vector<Busy>> busy(R);
    std::vector<std::int64_t> dpAnchor(R * S, kNone); // when the rank's inputs for its DP sync were there
    const int stages = tl.stageCount();
    // Ranks side by side: each writes its own transfers, busy times, anchors and statistics (and reads only
    // the stage of its peers). Compute samples per step go to the worker's own lists.
    std::vector<std::vector<std::vector<std::int64_t>>> fwdOf(threads), bwdOf(threads);
    auto rankStats = [&](std::size_t k, std::vector<Transfer>& list, std::vector<std::vector<std::int64_t>>& fwd,
                         std::vector<std::vector<std::int64_t>>& bwd) {
        // Nearly sorted already (records come by start; a peer's clock offset is constant).
        auto byStart = [](const Transfer& x, const Transfer& y) { return x.s < y.s; };
        sortNearlySorted(list, byStart);
        // A pipeline pair's last exchange of a step, both ways at once, is a collective of the pipeline's own (the
        // tied-embedding all-reduce between the first and last stage after the backward, which on pp = 2 is this
        // pair): no PP op (sampled as one, it made stage 0 of the real SE job 14% slower a micro-batch than it
        // was). Mid-step a pipeline in lockstep may send both ways at once by chance: PP traffic with that peer
        // follows there, in the same step.
        auto stepOf = [&](std::int64_t t) {
            return std::upper_bound(steps.begin(), steps.end(), t,
                                    [](std::int64_t v, const StepInfo& x) { return v < x.endNs; }) - steps.begin();
        };
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (list[i].kind != SegmentKind::PpSend) continue;
            std::size_t match = list.size();
            for (std::size_t j = i + 1; j < list.size() && list[j].s - list[i].s <= kBothWaysNs && match == list.size(); ++j)
                if (list[j].kind == SegmentKind::PpRecv && list[j].peer == list[i].peer) match = j;
            for (std::size_t j = i; j-- > 0 && list[i].s - list[j].s <= kBothWaysNs && match == list.size();)
                if (list[j].kind == SegmentKind::PpRecv && list[j].peer == list[i].peer) match = j;
            if (match == list.size()) continue;
            const std::size_t after = std::max(i, match) + 1;
            const auto step = stepOf(list[i].s);
            bool later = false;
            for (std::size_t j = after; j < list.size() && !later && stepOf(list[j].s) == step; ++j)
                later = list[j].peer == list[i].peer &&
                        (list[j].kind == SegmentKind::PpSend || list[j].kind == SegmentKind::PpRecv);
            if (!later) list[i].kind = list[match].kind = SegmentKind::DpSync;
        }
        RankTimeline& rt = tl.ranks[k];
        // Pipeline neighbours: upstream (earlier stage) and downstream (later stage). In a ring (interleaved
        // stages: the last stage sends the next model chunk to stage 0) the link between the last stage and
        // stage 0 runs forward from the last stage.
        auto upstream = [&](std::uint32_t peer) {
            const int p = tl.ranks[peer].stage, me = rt.stage;
            if (stages >= 3 && std::min(p, me) == 0 && std::max(p, me) == stages - 1) return me == 0;
            return p < me;
        };
        // Tied embeddings close the chain too, with an all-reduce a step, not a hand-over a micro-batch: pieces of
        // it that the both-ways rule above missed (a record lost, an active timeout's pieces) are no ring. A ring
        // end trades with the other end about as often as with its chain neighbour ((chunks - 1) / chunks); under
        // a quarter of that, its trades with the other end are the embedding's all-reduce.
        if (stages >= 3 && (rt.stage == 0 || rt.stage == stages - 1)) {
            std::size_t ends = 0, chain = 0;
            auto isEnd = [&](std::uint32_t peer) { return tl.ranks[peer].stage == stages - 1 - rt.stage; };
            for (const Transfer& t : list)
                if (t.kind == SegmentKind::PpSend || t.kind == SegmentKind::PpRecv) ++(isEnd(t.peer) ? ends : chain);
            if (ends > 0 && 4 * ends < chain)
                for (Transfer& t : list)
                    if ((t.kind == SegmentKind::PpSend || t.kind == SegmentKind::PpRecv) && isEnd(t.peer))
                        t.kind = SegmentKind::DpSync;
        }
        bool hasUp = false, hasDown = false, ringIn = false, ringOut = false;
        for (const Transfer& t : list) {
            if (t.kind != SegmentKind::PpSend && t.kind != SegmentKind::PpRecv) continue;
            (upstream(t.peer) ? hasUp : hasDown) = true;
            ringIn = ringIn || (rt.stage == 0 && upstream(t.peer));
            ringOut = ringOut || (stages >= 3 && rt.stage == stages - 1 && tl.ranks[t.peer].stage == 0);
        }
        std::size_t step = 0;
        std::uint32_t curStep = kNoIndex;
        struct Count {
            SegmentKind kind;
            std::uint32_t peer;
            std::uint16_t n;
        };
        std::vector<Count> counts;
        // Inputs of this step by micro-batch: receives from upstream (activations) and downstream (gradients).
        std::vector<std::int64_t> upEnd, downEnd;
        std::int64_t lastSend = kNone, lastDownEnd = kNone, lastDpEnd = kNone, lastUpEnd = kNone;
        std::int64_t lastExchangeEnd = kNone; // expert exchanges: inside ops, no sync (lastDpEnd: syncs only)
        std::vector<std::int64_t> grads; // gradients received and not yet used by a backward (no-upstream ranks)
        std::size_t gradsUsed = 0, forwardsSent = 0; // forwardsSent: of a no-upstream rank, this step
        std::vector<std::int64_t> settled;
        struct Pending {
            std::int64_t e;
            std::uint32_t step;
            std::uint16_t mb;
            bool up, dp, exchange = false;
        };
        std::vector<Pending> pending; // receives and syncs not finished when the current transfer starts
        fwd.assign(S, {});
        bwd.assign(S, {});
        auto input = [](const std::vector<std::int64_t>& v, std::uint16_t mb) {
            return mb < v.size() ? v[mb] : kNone;
        };
        for (Transfer& t : list) {
            while (step < S && t.s >= steps[step].endNs) ++step;
            const std::uint32_t st = step < S && t.s >= steps[step].startNs ? std::uint32_t(step) : kNoIndex;
            if (st != curStep) {
                counts.clear();
                upEnd.clear();
                downEnd.clear();
                lastSend = lastDownEnd = lastUpEnd = kNone;
                grads.clear();
                gradsUsed = forwardsSent = 0;
                curStep = st;
            }
            settled.clear();
            for (std::size_t i = 0; i < pending.size();) {
                const Pending& p = pending[i];
                if (p.e > t.s) {
                    ++i;
                    continue;
                }
                if (p.exchange) {
                    lastExchangeEnd = std::max(lastExchangeEnd, p.e);
                } else if (p.dp) {
                    lastDpEnd = std::max(lastDpEnd, p.e);
                } else if (p.step == curStep && p.mb != kNoMicroBatch) {
                    if (p.up) lastUpEnd = std::max(lastUpEnd, p.e);
                    auto& v = p.up ? upEnd : downEnd;
                    if (v.size() <= p.mb) v.resize(std::size_t(p.mb) + 1, kNone);
                    v[p.mb] = std::max(v[p.mb], p.e);
                    if (!p.up) {
                        lastDownEnd = std::max(lastDownEnd, p.e);
                        settled.push_back(p.e);
                    }
                }
                pending[i] = pending.back();
                pending.pop_back();
            }
            std::sort(settled.begin(), settled.end());
            grads.insert(grads.end(), settled.begin(), settled.end());
            const std::int64_t stepStart = st != kNoIndex ? steps[st].startNs : tl.startNs;
            if (t.kind == SegmentKind::PpSend || t.kind == SegmentKind::PpRecv) {
                auto it = std::find_if(counts.begin(), counts.end(),
                                       [&](const Count& c) { return c.kind == t.kind && c.peer == t.peer; });
                if (it == counts.end()) it = counts.insert(counts.end(), Count{t.kind, t.peer, 0});
                t.microBatch = it->n < kNoMicroBatch - 1 ? it->n++ : it->n;
            }
            if (t.kind == SegmentKind::PpSend) {
                // The op that produced this send began when the stage was free (its previous send) and its
                // input had arrived: the same micro-batch from upstream (forward) or downstream (backward;
                // the last stage's backward follows its own forward). On the first stage a backward sends
                // nothing and runs before the next forward (1F1B): once gradients arrive, each forward send
                // follows the backward of the oldest gradient not used yet.
                const bool forward = !upstream(t.peer);
                std::int64_t in = kNone;
                if (forward && ringIn) {
                    // Stage 0 of a ring: its first chunk's forwards need no input, its later chunks' the ring's
                    // activations, in an order the network does not show: the latest one that arrived since
                    // the last send is the most the op can have waited for (for the timeline's busy time; no
                    // compute sample is taken on this rank, below).
                    in = lastUpEnd > lastSend ? lastUpEnd : kNone;
                } else if (forward && !hasUp) {
                    // Every forward's gradient back: the pipeline drained (gradient accumulation's next round),
                    // and its forwards are warm-up again; the round's cool-down gradients are no forward's input
                    // (they made the next round's first forward read the drain as compute). Three stages or more:
                    // with two, one forward is out in the steady state, and a lost send record looks drained.
                    if (stages >= 3 && forwardsSent == grads.size()) gradsUsed = grads.size();
                    in = gradsUsed < grads.size() ? grads[gradsUsed++] : kNone;
                    ++forwardsSent;
                } else if (forward) in = input(upEnd, t.microBatch);
                else in = hasDown ? input(downEnd, t.microBatch) : input(upEnd, t.microBatch);
                const std::int64_t ppAnchor = std::max(lastSend, in);
                // A lead (the first op after the step start or a sync): not anchored at an input, a send or an
                // expert exchange of this step.
                const std::int64_t anchor = std::max({stepStart, ppAnchor, lastDpEnd, lastExchangeEnd});
                if (segments && anchor < t.s)
                    busy[k].push_back({anchor, t.s, std::max(ppAnchor, lastExchangeEnd) < anchor});
                // A compute sample only when the op's start is known from PP events of this step. On the ends
                // of a ring (interleaved stages) inputs cannot be matched to ops once the chunks interleave, and
                // the ends receive inputs for ops that send nothing (stage 0's first chunk backward, the last
                // stage's last chunk forward). There only the warm-up is sampled, where the first chunk's
                // forwards of the first `stages` micro-batches come in order: stage 0 runs them back to back on
                // its own data (each from its previous send; the schedule runs no other op before them), the last stage
                // sends each to stage 0 (its input: the same micro-batch's activation from upstream). A slow
                // GPU at a ring end shows there as on any stage; what follows the warm-up is not judged.
                std::int64_t sampleAnchor = ppAnchor;
                // Stage 0's forwards before its first gradient are warm-up forwards, one op where the others
                // after it hold a backward and a forward: counted apart (with them in, stage 0's time a
                // micro-batch read 1.28x short of the last stage's on clean pp = 2 jobs of 4 micro-batches; a
                // rank is still judged on them, where m <= pp - 1 they are all of stage 0's samples).
                const bool warmup = forward && !hasUp && !ringIn && hasDown && in == kNone;
                if (ringIn) sampleAnchor = forward && t.microBatch >= 1 && t.microBatch < stages ? lastSend : kNone;
                else if (ringOut)
                    sampleAnchor = forward && t.microBatch < stages ? ppAnchor : kNone;
                if (st != kNoIndex && sampleAnchor != kNone && sampleAnchor >= stepStart && sampleAnchor >= lastDpEnd &&
                    sampleAnchor >= lastExchangeEnd && sampleAnchor <= t.s) {
                    if (warmup) {
                        rt.stepStats[st].warmupComputeNs += t.s - sampleAnchor;
                        ++rt.stepStats[st].warmupSamples;
                    } else {
                        (forward ? fwd : bwd)[st].push_back(t.s - sampleAnchor);
                    }
                }
                lastSend = std::max(lastSend, t.s);
            } else if (t.kind == SegmentKind::PpRecv) {
                pending.push_back({t.e, st, t.microBatch, upstream(t.peer), false});
            } else if (t.kind == SegmentKind::DpSync) {
                // An expert exchange is no sync: it neither starts nor ends the step's DP sync. It is posted
                // from inside an op (dispatch before the experts, combine after them): the rank computed from
                // its last event (an input, its last send or exchange) to it. Else the time before each
                // exchange read as waiting (80% of a MoE step).
                if (segments && t.exchange) {
                    const std::int64_t lastIn = std::max({lastSend, lastDownEnd, lastUpEnd, lastExchangeEnd});
                    const std::int64_t anchor = std::max({stepStart, lastIn, lastDpEnd});
                    if (anchor < t.s) busy[k].push_back({anchor, t.s, lastIn < anchor}); // a lead: see below
                }
                // The sync that ends the step: a distributed optimizer's parameter all-gather opens the step
                // before it (its round starts at the division's syncStartNs), and a pipeline's tied-embedding
                // all-reduce (a peer of another DP group) comes just before it; neither is the gradient sync.
                const bool gradientSync =
                    (!division || st >= division->syncStartNs.size() ||
                     t.s + kSyncSlackNs >= division->syncStartNs[st]) &&
                    (t.peer >= tl.ranks.size() || tl.ranks[t.peer].dpGroup == rt.dpGroup);
                if (st != kNoIndex && !t.exchange && gradientSync) {
                    RankStepStats& ss = rt.stepStats[st];
                    if (ss.dpStartNs == RankStepStats::kNoTime) {
                        ss.dpStartNs = t.s;
                        std::int64_t lastIn = std::max(lastSend, lastDownEnd);
                        for (std::int64_t e : upEnd) lastIn = std::max(lastIn, e);
                        dpAnchor[k * S + st] = std::max({stepStart, lastIn, lastDpEnd, lastExchangeEnd});
                    }
                    ss.dpEndNs = ss.dpEndNs == RankStepStats::kNoTime ? t.e : std::max(ss.dpEndNs, t.e);
                }
                pending.push_back({t.e, st, kNoMicroBatch, false, true, t.exchange});
            }
            if (st != kNoIndex) {
                if (t.kind == SegmentKind::PpSend) ++rt.stepStats[st].ppSends;
                if (t.kind == SegmentKind::PpRecv) ++rt.stepStats[st].ppRecvs;
            }
        }
        for (std::size_t s = 0; s < S; ++s) {
            RankStepStats& ss = rt.stepStats[s];
            ss.forwardSamples = std::uint32_t(fwd[s].size());
            ss.backwardSamples = std::uint32_t(bwd[s].size());
            for (std::int64_t v : fwd[s]) ss.forwardComputeNs += v;
            for (std::int64_t v : bwd[s]) ss.backwardComputeNs += v;
            ss.earlyForwardSamples =
                std::uint32_t(std::min<std::size_t>(fwd[s].size(), std::size_t(std::max(stages - 1, 1))));
            for (std::size_t i = 0; i < ss.earlyForwardSamples; ++i) ss.earlyForwardNs += fwd[s][i];
        }
    };
    // Before a DP sync: the group member with the shortest gap was the last one ready; that gap is compute
    // for every member, the rest of a longer gap is waiting for it. Over ranks [k0, k1) that hold whole groups.
    int groups = 0;
    for (const RankTimeline& r : tl.ranks) groups = std::max(groups, r.dpGroup + 1);
    std::vector<std::int64_t> minGap(static_cast<std::size_t>(groups)), minStart(minGap.size());
    auto settle = [&](std::size_t k0, std::size_t k1) {
        for (std::size_t s = 0; s < S; ++s) {
            for (std::size_t k = k0; k < k1; ++k) { // the groups of these ranks only (a block holds a few)
                const std::size_t g = std::size_t(tl.ranks[k].dpGroup);
                minGap[g] = minStart[g] = std::numeric_limits<std::int64_t>::max();
            }
            for (std::size_t k = k0; k < k1; ++k) {
                const RankStepStats& ss = tl.ranks[k].stepStats[s];
                if (ss.dpStartNs == RankStepStats::kNoTime) continue;
                const std::size_t g = std::size_t(tl.ranks[k].dpGroup);
                minGap[g] = std::min(minGap[g], ss.dpStartNs - dpAnchor[k * S + s]);
                minStart[g] = std::min(minStart[g], ss.dpStartNs);
            }
            for (std::size_t k = k0; k < k1; ++k) {
                RankStepStats& ss = tl.ranks[k].stepStats[s];
                if (ss.dpStartNs == RankStepStats::kNoTime) continue;
                const std::size_t g = std::size_t(tl.ranks[k].dpGroup);
                ss.dpStartLagNs = ss.dpStartNs - minStart[g];
                const std::int64_t a = dpAnchor[k * S + s];
                // (A sync overlapped with the backward starts before the last member's last op ends: its gap is
                // negative, and the others waited all of theirs.)
                ss.dpWaitNs = std::max<std::int64_t>(0, ss.dpStartNs - a - std::max<std::int64_t>(minGap[g], 0));
                if (segments && minGap[g] > 0)
                    busy[k].push_back({a, std::min(ss.dpStartNs, a + minGap[g]), a <= steps[s].startNs});
            }
        }
    };

    std::vector<std::int64_t> bounds;
    if (S) bounds.push_back(steps.front().startNs);
    for (const StepInfo& st : steps) bounds.push_back(st.endNs);
    std::sort(bounds.begin(), bounds.end());

    // Non-overlapping segments: a transfer extends the previous segment of the same kind (and peer, for PP);
    // otherwise it starts where the previous one ended. Gaps are compute where the rank was busy, else wait.
    auto makeSegments = [&](std::size_t k, std::vector<Transfer>& list) {
        // A job-wide stall before a step (a pause, a checkpoint) shows as a long first op: beyond 1.5 times the
        // rank's usual first op, it is waiting, not compute. (In a job without PP traffic the first op is the
        // compute before the DP sync: a 70 s checkpoint read as 116 s of compute.)
        {
            std::vector<std::int64_t> leads;
            for (const Busy& b : busy[k])
                if (b.lead) leads.push_back(b.e - b.s);
            if (leads.size() >= 3) {
                const std::int64_t usual = upperMedian(leads);
                for (Busy& b : busy[k])
                    if (b.lead && b.e - b.s > usual + usual / 2) b.s = b.e - usual;
            }
        }
        RankTimeline& rt = tl.ranks[k];
        auto& bz = busy[k];
        auto busyOrder = [](const Busy& x, const Busy& y) { return x.s < y.s; };
        if (!std::is_sorted(bz.begin(), bz.end(), busyOrder)) std::sort(bz.begin(), bz.end(), busyOrder);
        std::size_t bi = 0;
        std::vector<Segment>& out = rt.segments;
        out.reserve(list.size() * 2 + 1);
        // Gap segments are cut at step boundaries, so that each belongs to one step.
        auto push = [&](std::int64_t s, std::int64_t e, SegmentKind kind) {
            while (s < e) {
                auto b = std::upper_bound(bounds.begin(), bounds.end(), s);
                const std::int64_t cut = b != bounds.end() && *b < e ? *b : e;
                if (!out.empty() && out.back().kind == kind && out.back().endNs == s &&
                    !std::binary_search(bounds.begin(), bounds.end(), s))
                    out.back().endNs = cut;
                else out.push_back({s, cut, kind, kNoMicroBatch, kNoIndex, 0});
                s = cut;
            }
        };
        auto gapTo = [&](std::int64_t g0, std::int64_t g1) {
            while (bi < bz.size() && bz[bi].e <= g0) ++bi;
            std::int64_t c = g0;
            for (std::size_t j = bi; j < bz.size() && bz[j].s < g1 && c < g1; ++j) {
                const std::int64_t bs = std::max(bz[j].s, c), be = std::min(bz[j].e, g1);
                if (be <= bs) continue;
                push(c, bs, SegmentKind::Wait);
                push(bs, be, SegmentKind::Compute);
                c = be;
            }
            push(c, g1, SegmentKind::Wait);
        };
        std::int64_t cursor = tl.startNs;
        for (const Transfer& t : list) {
            if (!out.empty() && out.back().kind == t.kind && t.s <= out.back().endNs &&
                (t.kind == SegmentKind::DpSync || out.back().peer == t.peer)) {
                out.back().endNs = std::max(out.back().endNs, t.e);
                out.back().bytes += t.bytes;
                cursor = std::max(cursor, out.back().endNs);
                continue;
            }
            if (t.e <= cursor) {
                if (!out.empty()) out.back().bytes += t.bytes;
                continue;
            }
            const std::int64_t s = std::max(t.s, cursor);
            if (s > cursor) gapTo(cursor, s);
            out.push_back({s, t.e, t.kind, t.microBatch, t.peer, t.bytes});
            cursor = t.e;
        }
        StepWalk stepOf(steps); // segments and steps are both sorted
        for (Segment& seg : out) {
            const std::uint32_t st = stepOf.next(seg.startNs);
            rt.maxSegmentNs = std::max(rt.maxSegmentNs, seg.endNs - seg.startNs);
            if (st == kNoIndex) continue;
            RankStepStats& ss = rt.stepStats[std::size_t(st)];
            const std::int64_t d = seg.endNs - seg.startNs;
            switch (seg.kind) {
            case SegmentKind::Compute: ss.computeNs += d; break;
            case SegmentKind::Wait: ss.waitNs += d; break;
            case SegmentKind::PpSend: ss.ppSendNs += d; break;
            case SegmentKind::PpRecv: ss.ppRecvNs += d; break;
            case SegmentKind::DpSync: ss.dpSyncNs += d; break;
            case SegmentKind::Other: ss.otherNs += d; break;
            }
        }
        // The reservation above is a bound (gaps cut at step ends can pass it and double the vector): the views
        // keep the segments of every rank as long as the job is open, so they are held at their size, or packed.
        if (pack) {
            rt.packed.pack(out);
            std::vector<Segment>().swap(out);
        } else {
            out.shrink_to_fit();
        }
        std::vector<Transfer>().swap(list);
        std::vector<Busy>().swap(bz);
    };

    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t lo = cuts[b], hi = cuts[b + 1];
        transfersOf(b);
        parallelFor(hi - lo, threads, [&](std::size_t kk, unsigned worker) {
            rankStats(lo + kk, lists[kk].transfers, fwdOf[worker], bwdOf[worker]);
        });
        if (!segments) continue;
        settle(lo, hi); // whole groups
        parallelFor(hi - lo, threads, [&](std::size_t kk, unsigned) { makeSegments(lo + kk, lists[kk].transfers); });
        // The block's transfers and unpacked segments are freed under the packed segments kept: their pages go
        // back now, not only once the job is done (on `large` 8 MB less at the GUI's peak, no slower).
        releaseFreedMemory();
    }
    std::vector<std::uint8_t>().swap(passes);
    if (!segments) {
        settle(0, R); // blocks of any ranks: the groups once all are done
        return tl;
    }
    releaseFreedMemory();
    return tl;
}

} // namespace

const char* segmentKindName(SegmentKind kind) {
    switch (kind) {
    case SegmentKind::Compute: return "compute";
    case SegmentKind::PpSend: return "PP send";
    case SegmentKind::PpRecv: return "PP receive";
    case SegmentKind::DpSync: return "DP sync";
    case SegmentKind::Wait: return "waiting";
    case SegmentKind::Other: return "other";
    }
    return "?";
}

namespace {

std::pair<std::size_t, std::size_t> visibleRange(const std::vector<Segment>& s, std::int64_t maxSegmentNs,
                                                 std::int64_t t0, std::int64_t t1) {
    if (t1 <= t0) return {0, 0};
    // Segments are sorted by start and do not overlap, so the first visible one starts after t0 - longest.
    auto first = std::lower_bound(s.begin(), s.end(), t0 - maxSegmentNs,
                                  [](const Segment& seg, std::int64_t t) { return seg.startNs < t; });
    while (first != s.end() && first->endNs <= t0) ++first;
    auto last =
        std::lower_bound(first, s.end(), t1, [](const Segment& seg, std::int64_t t) { return seg.startNs < t; });
    return {std::size_t(first - s.begin()), std::size_t(last - s.begin())};
}

} // namespace

std::pair<std::size_t, std::size_t> JobTimeline::visible(std::size_t rank, std::int64_t t0, std::int64_t t1) const {
    if (rank >= ranks.size()) return {0, 0};
    return visibleRange(ranks[rank].segments, ranks[rank].maxSegmentNs, t0, t1);
}

std::span<const Segment> RankTimeline::visibleSegments(std::int64_t t0, std::int64_t t1, std::vector<Segment>& scratch,
                                                       std::size_t* first) const {
    if (!packed.empty()) {
        const std::size_t f = packed.visible(t0, t1, maxSegmentNs, scratch);
        if (first) *first = f;
        return scratch;
    }
    const auto [a, b] = visibleRange(segments, maxSegmentNs, t0, t1);
    if (first) *first = a;
    return std::span<const Segment>(segments).subspan(a, b - a);
}

int JobTimeline::stepAt(std::int64_t t) const {
    auto it = std::upper_bound(steps.begin(), steps.end(), t,
                               [](std::int64_t v, const StepInfo& st) { return v < st.endNs; });
    if (it == steps.end() || t < it->startNs) return -1;
    return int(it - steps.begin());
}

int JobTimeline::stageCount() const {
    int stages = 0;
    for (const RankTimeline& r : ranks) stages = std::max(stages, r.stage + 1);
    return stages;
}

std::size_t JobTimeline::segmentCount() const {
    std::size_t n = 0;
    for (const auto& r : ranks) n += r.segmentCount();
    return n;
}

int JobTimeline::rankOf(const std::string& ip) const {
    for (std::size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r].ip == ip) return int(r);
    return -1;
}

const RankStepStats* JobTimeline::stats(std::size_t rank, std::size_t step) const {
    if (rank >= ranks.size() || step >= ranks[rank].stepStats.size()) return nullptr;
    return &ranks[rank].stepStats[step];
}

JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& parallelism, const std::vector<StepInfo>& steps) {
    return build(flows, topology, job, parallelism, steps, {}, true, nullptr, nullptr);
}

JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& parallelism, const StepDivision& division, const JobIndex* index,
                          bool pack, std::size_t blockRanks) {
    return build(flows, topology, job, parallelism, division.steps, division.clockOffsetNs, true, index, &division, 0,
                 pack, blockRanks);
}

JobTimeline buildTimelineStats(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                               const ParallelismResult& parallelism, const StepDivision& division,
                               const JobIndex* index, unsigned threads) {
    return build(flows, topology, job, parallelism, division.steps, division.clockOffsetNs, false, index, &division,
                 threads);
}

} // namespace prism
