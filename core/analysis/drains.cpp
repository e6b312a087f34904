#include "analysis/drains.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <queue>

namespace prism {

namespace {

using Piece = std::pair<std::int64_t, std::int64_t>;

// Per piece: whether it cannot open a step. A step opens on the head links (stage 0's activations): a piece with
// no head-link record is some collective between stages (tied embeddings: stage 0 and the last all-reduce the
// embedding gradients once the pipeline has drained, on closing pairs that may not even be links), and so is a
// piece where every link carries one transfer each way, the two at once (the same all-reduce where the closing
// pair is the head link, pp = 2), while a busy piece holds several transfers a link. (Any head record, not an
// activation only: exporters' clocks apart, a step's last gradient may stamp after the drain.) `recs` sorted by
// start, each inside one piece.
std::vector<bool> pairCollectives(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs) {
    struct Way {
        std::uint32_t link;
        int transfers[2] = {0, 0};
        std::int64_t start[2] = {0, 0}; // of the direction's transfer
        TransferJoin join[2] = {};
    };
    std::vector<bool> out(pieces.size(), true); // pieces without records open no step
    std::vector<Way> ways;                      // of the current piece
    bool opens = false;                         // the current piece has a head link's record
    std::size_t k = 0;
    auto close = [&] {
        if (k < out.size())
            out[k] = !opens || std::all_of(ways.begin(), ways.end(), [](const Way& w) {
                return w.transfers[0] == 1 && w.transfers[1] == 1 && w.start[0] <= w.join[1].end() &&
                       w.start[1] <= w.join[0].end();
            });
        ways.clear();
        opens = false;
    };
    for (const LinkRecord& r : recs) {
        while (k + 1 < pieces.size() && pieces[k].second < r.s) {
            close();
            ++k;
        }
        auto it = std::find_if(ways.begin(), ways.end(), [&](const Way& w) { return w.link == r.link; });
        if (it == ways.end()) it = ways.insert(ways.end(), Way{r.link});
        const int d = r.dir > 0 ? 0 : 1;
        opens = opens || r.head;
        if (it->join[d].startsNew(r.s, r.e)) {
            ++it->transfers[d];
            it->start[d] = r.s;
        }
    }
    close();
    return out;
}

// The quiet gap between pieces g and g + 1.
double gapAfter(const std::vector<Piece>& pieces, std::size_t g) {
    return double(pieces[g + 1].first - pieces[g].second);
}

// The 90th percentile of the quiet gaps between pieces (0 with fewer than two pieces).
double longGap(const std::vector<Piece>& pieces) {
    if (pieces.size() < 2) return 0;
    std::vector<double> gaps(pieces.size() - 1);
    for (std::size_t g = 0; g < gaps.size(); ++g) gaps[g] = gapAfter(pieces, g);
    const auto at = gaps.begin() + std::ptrdiff_t((gaps.size() - 1) * 9 / 10);
    std::nth_element(gaps.begin(), at, gaps.end());
    return *at;
}

// A running median: the lower half in a max-heap, the upper in a min-heap.
class RunningMedian {
public:
    bool empty() const { return m_lower.empty(); }
    void add(double x) {
        if (m_lower.empty() || x <= m_lower.top()) m_lower.push(x);
        else m_upper.push(x);
        if (m_lower.size() > m_upper.size() + 1) {
            m_upper.push(m_lower.top());
            m_lower.pop();
        } else if (m_upper.size() > m_lower.size()) {
            m_lower.push(m_upper.top());
            m_upper.pop();
        }
    }
    double median() const {
        return m_lower.size() > m_upper.size() ? m_lower.top() : 0.5 * (m_lower.top() + m_upper.top());
    }

private:
    std::priority_queue<double> m_lower;
    std::priority_queue<double, std::vector<double>, std::greater<double>> m_upper;
};

// A transfer (TransferJoin) on a link: a change of its depth after the piece it falls in.
struct DepthEvent {
    std::uint32_t piece, link;
    std::int32_t delta; // +1 an activation, -1 a gradient
};

// The transfers of `recs` (sorted by start, each inside one of `pieces`), those in a `skip` piece passed over.
std::vector<DepthEvent> transferEvents(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs,
                                       std::uint32_t links, const std::vector<bool>& skip) {
    std::vector<DepthEvent> events;
    std::vector<TransferJoin> joins(2 * std::size_t(links));
    std::size_t k = 0;
    for (const LinkRecord& r : recs) {
        while (k + 1 < pieces.size() && pieces[k].second < r.s) ++k;
        if (skip[k]) continue;
        if (joins[2 * std::size_t(r.link) + (r.dir > 0 ? 1 : 0)].startsNew(r.s, r.e))
            events.push_back({std::uint32_t(k), r.link, r.dir > 0 ? 1 : -1});
    }
    return events;
}

// What each link carries next (deltas, 0 for none): after each event, its link's next two; before any, each
// link's first two.
struct Lookahead {
    std::vector<std::int32_t> next, afterNext;           // per event
    std::vector<std::int32_t> firstNext, firstAfterNext; // per link
};
Lookahead lookahead(const std::vector<DepthEvent>& events, std::uint32_t links) {
    Lookahead a{std::vector<std::int32_t>(events.size(), 0), std::vector<std::int32_t>(events.size(), 0),
                std::vector<std::int32_t>(links, 0), std::vector<std::int32_t>(links, 0)};
    std::vector<std::size_t> pending(links, events.size()), pending2(links, events.size());
    for (std::size_t i = events.size(); i-- > 0;) {
        const std::uint32_t l = events[i].link;
        if (pending[l] < events.size()) a.next[i] = events[pending[l]].delta;
        if (pending2[l] < events.size()) a.afterNext[i] = events[pending2[l]].delta;
        pending2[l] = pending[l];
        pending[l] = i;
    }
    for (std::uint32_t l = 0; l < links; ++l) {
        if (pending[l] < events.size()) a.firstNext[l] = events[pending[l]].delta;
        if (pending2[l] < events.size()) a.firstAfterNext[l] = events[pending2[l]].delta;
    }
    return a;
}

} // namespace

DrainScan scanDrains(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs, const StepParams& p) {
    DrainScan out;
    const std::size_t n = pieces.size();
    if (n == 0) return out;
    const std::size_t G = n - 1;
    std::uint32_t links = 0;
    for (const LinkRecord& r : recs) links = std::max(links, r.link + 1);
    if (links == 0) {
        out.share.assign(G, 0.0);
        return out;
    }

    std::vector<bool> head(links, false);
    for (const LinkRecord& r : recs) head[r.link] = head[r.link] || r.head;
    const std::size_t heads = std::size_t(std::count(head.begin(), head.end(), true));
    const bool pairsOnly = heads == links; // pp = 2 (below)
    // At pp = 2 a step's tied-embedding all-reduce (a transfer each way at once, after the drain) changes no
    // depth and is no transfer of the pipeline: its piece is passed over, its quiet before it is the drain's.
    const std::vector<bool> collective =
        pairsOnly ? pairCollectives(pieces, recs) : std::vector<bool>(n, false);

    const std::vector<DepthEvent> events = transferEvents(pieces, recs, links, collective);

    // Sweep the gaps: a link rests when its depth is at its lowest so far (in flight is never negative; a
    // capture that starts mid-step sees the gradients of earlier activations come back first, and reaches
    // the resting level at the first drain). Where most links rest the pipeline is drained, so the others
    // are re-levelled there (a gradient whose every record was lost leaves its link one too deep).
    //
    // Lost records move a link's count both ways, and the transfer after the gap tells which. A link at its
    // level whose next transfer is a gradient has not rested: an activation of this step was lost, and the
    // gradient still to come takes it lower (it would read as drained one gradient early). A link one transfer
    // deeper than its level rests when its last transfer was a gradient and its next an activation: the step's
    // gradients are back but one was lost. Where the pipelines have deeper links too (pp >= 3), in strict 1F1B
    // a head link is pp - 1 or more deep after a gradient inside a step, and the head links' share bounds the
    // drain (pp = 2, heads only, needs more: below). The deeper links may read one deep mid-step, but they
    // cannot make a drain the heads deny; without the rule, links that each lose a gradient a step (interleaved
    // chunks carry 100+ transfers a link and step: at 1.5% loss about half the links) never rest together,
    // nothing is re-levelled, and no later step is drained.
    // Heads only (pp = 2): inside a step every link carries an activation and a gradient per micro-batch, sent
    // about at once by balanced stages, so the count dips to its level between the two of a pair, and a lost
    // activation or gradient leaves it at or one above its level at every gap after it for the rest of the
    // step. A pp = 2 link therefore rests only at a quiet gap as long as a drain's (the test of `forgiven`
    // below), and only where its next two transfers are activations: stage 0's warm-up sends two forwards
    // before the first gradient returns (micro-batches >= pp), while inside a step an activation is followed
    // by a gradient; at its level whatever follows only at a gap clearly longer (kLoose). Without it a lost
    // gradient kept the link from ever resting again (TP 1 x PP 2 at 2% loss: 4 steps for 13, the orientation
    // reversed).
    std::vector<int> depth(links, 0), level(links, 0);
    // The deltas of each link's last two transfers and of its next two.
    const Lookahead ahead = lookahead(events, links);
    std::vector<std::int32_t> beforeLast(links, 0), lastDelta(links, 0);
    std::vector<std::int32_t> nextDelta = ahead.firstNext, afterNext = ahead.firstAfterNext;
    // A link rests at its level with no gradient to come. It is forgiven a lost gradient (one above its level,
    // between a gradient and an activation) only at a quiet gap at least half the median of the drains' gaps so
    // far (before the first drain, half the 90th percentile of all gaps): a capture that starts inside a step has a
    // micro-batch in flight it never saw, and a pipeline whose stage 0 is its slowest returns gradients fast
    // enough that its head links sit one above their level between micro-batches — read as rests there, the
    // heads were levelled up and the steps drained at every micro-batch (PP 3 with tied embeddings: 1,646 steps
    // for 27). A step end's quiet holds the optimizer; the gaps between micro-batches are shorter.
    bool drained = false;
    // The rest tests, from the strictest: at the level; also one above it (forgiven); and for pp = 2 at a gap
    // clearly longer than a micro-batch's, at the level whatever follows (a slow stage 0 has each gradient back
    // before its next activation, so a step of it starts with an activation and a gradient too); and for
    // pp = 2 at a shorter gap, a turn: two gradients behind (the cool-down) and two activations ahead. A slow
    // last stage has its gaps between micro-batches longer than the optimizer's, and a pause among the first
    // drains set their median out of reach of every other step end (TP 4 x PP 2: 3 steps of 25).
    enum Test { kStrict, kForgiven, kLoose, kTurn, kTests };
    auto atLevel = [&](std::uint32_t l) { return depth[l] == level[l] && nextDelta[l] >= 0; };
    auto warmUpNext = [&](std::uint32_t l) { return !pairsOnly || afterNext[l] >= 0; };
    auto oneUp = [&](std::uint32_t l) {
        return (head[l] || p.anyLinkLosesGradients) && depth[l] == level[l] + 1 && lastDelta[l] < 0 &&
               nextDelta[l] > 0;
    };
    auto rests = [&](std::uint32_t l, int test) {
        if (test == kTurn) // cool-down behind, warm-up ahead
            return (atLevel(l) || oneUp(l)) && beforeLast[l] < 0 && lastDelta[l] < 0 && nextDelta[l] > 0 &&
                   afterNext[l] >= 0;
        if (test == kStrict) return atLevel(l) && warmUpNext(l);
        if (test == kForgiven) return (atLevel(l) || oneUp(l)) && warmUpNext(l);
        return atLevel(l) || (oneUp(l) && warmUpNext(l));
    };
    struct Count {
        std::size_t all = 0, heads = 0;
    };
    std::array<Count, kTests> count;
    auto recount = [&] {
        count = {};
        for (std::uint32_t l = 0; l < links; ++l)
            for (int t = 0; t < kTests; ++t) {
                const bool r = rests(l, t);
                count[t].all += r;
                count[t].heads += head[l] && r;
            }
    };
    recount();
    auto shareOf = [&](const Count& c) { // of all links and of the head links, the smaller
        const double all = double(c.all) / double(links);
        return heads ? std::min(all, double(c.heads) / double(heads)) : all;
    };
    std::vector<double>& share = out.share;
    share.resize(n); // after each piece; the last one is the state the capture ends in
    // Before the first drain, the long gaps of the whole series (step ends are among the longest); then the
    // drains' own.
    const double firstGap = longGap(pieces);
    RunningMedian drainGaps;
    std::size_t e = 0;
    std::vector<std::uint32_t> touched; // links with a transfer in the current piece
    auto update = [&](std::uint32_t l, auto change) {
        std::array<bool, kTests> was;
        for (int t = 0; t < kTests; ++t) was[t] = rests(l, t);
        change();
        for (int t = 0; t < kTests; ++t) {
            const bool now = rests(l, t);
            count[t].all = count[t].all + now - was[t];
            if (head[l]) count[t].heads = count[t].heads + now - was[t];
        }
    };
    for (std::size_t g = 0; g < n; ++g) {
        // The level follows the depth after the piece, not inside it: both halves of an all-reduce on a link
        // start at once, and the one read first would otherwise set a level one below the link's rest for good.
        touched.clear();
        for (; e < events.size() && events[e].piece == g; ++e) {
            const std::uint32_t l = events[e].link;
            update(l, [&] {
                depth[l] += events[e].delta;
                beforeLast[l] = lastDelta[l];
                lastDelta[l] = events[e].delta;
                nextDelta[l] = ahead.next[e];
                afterNext[l] = ahead.afterNext[e];
            });
            touched.push_back(l);
        }
        for (std::uint32_t l : touched)
            if (depth[l] < level[l]) update(l, [&] { level[l] = depth[l]; });
        double gap = g + 1 < n ? gapAfter(pieces, g) : 0.0;
        if (g > 0 && collective[g]) gap = std::max(gap, gapAfter(pieces, g - 1));
        const double drainGap = drainGaps.empty() ? firstGap : drainGaps.median();
        int test = gap >= 0.5 * drainGap ? kForgiven : kStrict;
        if (pairsOnly && g + 1 < n)
            test = collective[g + 1]                           ? -1
                   : gap >= 0.75 * drainGap                    ? kLoose
                   : gap >= 0.5 * drainGap                     ? kForgiven
                   : p.twoStageTurns && gap >= 0.25 * firstGap ? kTurn
                                                               : -1;
        const Count c = test < 0 ? Count{} : count[std::size_t(test)];
        share[g] = shareOf(c);
        if (share[g] < p.drainedShare) continue;
        if (!drained) // gradients came back for activations sent before the capture began
            out.startsMidStep = std::any_of(level.begin(), level.end(), [](int v) { return v < 0; });
        drained = true;
        // The drains' gaps measure what a step end's quiet is; at pp = 2 only the drains with a warm-up after
        // them do (rests at the level whatever follows, once counted, made every micro-batch's gap the measure).
        if (g + 1 < n && (test != kLoose || shareOf(count[kForgiven]) >= p.drainedShare)) drainGaps.add(gap);
        if (c.all < links || count[kStrict].all < c.all) {
            // The links that did not rest, and those forgiven a lost gradient (their rest is one higher now: a
            // link that loses a gradient in every other step would otherwise climb out of reach of the rule).
            // Only links whose last transfer was a gradient: one whose last was an activation has begun the next
            // step (replicas start their warm-ups a little apart), and levelling it there would ratchet its level
            // up a micro-batch at each such gap (PP 9 x DP 2 within hosts: a drain at every micro-batch).
            for (std::uint32_t l = 0; l < links; ++l)
                if (lastDelta[l] < 0) level[l] = depth[l];
            recount();
        }
    }
    out.endShare = share.back();
    share.pop_back();
    return out;
}

std::vector<std::size_t> choosePipelineCuts(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs,
                                            const StepParams& p, DrainScan* scanOut) {
    DrainScan scan = scanDrains(pieces, recs, p);
    const std::vector<double>& share = scan.share;
    const std::vector<bool> collective = pairCollectives(pieces, recs);
    std::vector<Piece> drained;          // the activity between drained gaps
    std::vector<std::size_t> lastPiece; // of each
    std::int64_t start = pieces.empty() ? 0 : pieces.front().first;
    for (std::size_t g = 0; g < share.size(); ++g) {
        if (share[g] < p.drainedShare || pieces[g + 1].first - pieces[g].second < p.minBoundaryGapNs) continue;
        if (collective[g + 1]) continue; // the step's own closing all-reduce follows its drain
        drained.push_back({start, pieces[g].second});
        lastPiece.push_back(g);
        start = pieces[g + 1].first;
    }
    if (drained.empty()) {
        if (scanOut) *scanOut = std::move(scan);
        return chooseCuts(pieces, p, 1.0);
    }
    drained.push_back({start, pieces.back().second});
    lastPiece.push_back(pieces.size() - 1);
    std::vector<std::size_t> cuts = chooseCuts(drained, p, 1.0, true);
    for (std::size_t& c : cuts) c = lastPiece[c];
    if (scanOut) *scanOut = std::move(scan);
    return cuts;
}

} // namespace prism
