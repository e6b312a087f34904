#include "analysis/drains.h"

#include <algorithm>
#include <limits>

namespace prism {

namespace {

using Piece = std::pair<std::int64_t, std::int64_t>;

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

    // Transfers, as depth changes after the piece they fall in: a record that starts while the previous one of
    // its link and direction is still open (another channel) or within kTransferJoinNs of its end (the next
    // active-timeout piece) continues that transfer.
    constexpr std::int64_t kTransferJoinNs = 5'000;
    struct Event {
        std::uint32_t piece, link;
        std::int32_t delta;
    };
    std::vector<Event> events;
    std::vector<std::int64_t> lastEnd(2 * std::size_t(links), std::numeric_limits<std::int64_t>::min());
    std::size_t k = 0;
    for (const LinkRecord& r : recs) {
        while (k + 1 < n && pieces[k].second < r.s) ++k;
        std::int64_t& last = lastEnd[2 * std::size_t(r.link) + (r.dir > 0 ? 1 : 0)];
        const bool joins = last != std::numeric_limits<std::int64_t>::min() && r.s <= last + kTransferJoinNs;
        last = joins ? std::max(last, r.e) : r.e;
        if (!joins) events.push_back({std::uint32_t(k), r.link, r.dir > 0 ? 1 : -1});
    }

    // Sweep the gaps: a link rests when its depth is at its lowest so far (in flight is never negative; a
    // capture that starts mid-step sees the gradients of earlier activations come back first, and reaches
    // the resting level at the first drain). Where most links rest the pipeline is drained, so the others
    // are re-levelled there (a gradient whose every record was lost leaves its link one too deep).
    std::vector<bool> head(links, false);
    for (const LinkRecord& r : recs) head[r.link] = head[r.link] || r.head;
    const std::size_t heads = std::size_t(std::count(head.begin(), head.end(), true));
    std::vector<int> depth(links, 0), level(links, 0);
    std::size_t atRest = links, headsAtRest = heads;
    std::vector<double>& share = out.share;
    share.resize(n); // after each piece; the last one is the state the capture ends in
    bool drained = false;
    std::size_t e = 0;
    for (std::size_t g = 0; g < n; ++g) {
        for (; e < events.size() && events[e].piece == g; ++e) {
            const std::uint32_t l = events[e].link;
            const bool was = depth[l] == level[l];
            depth[l] += events[e].delta;
            level[l] = std::min(level[l], depth[l]);
            const bool now = depth[l] == level[l];
            atRest = atRest + now - was;
            if (head[l]) headsAtRest = headsAtRest + now - was;
        }
        share[g] = double(atRest) / double(links);
        if (heads) share[g] = std::min(share[g], double(headsAtRest) / double(heads));
        if (share[g] < p.drainedShare) continue;
        if (!drained) // gradients came back for activations sent before the capture began
            out.startsMidStep = std::any_of(level.begin(), level.end(), [](int v) { return v < 0; });
        drained = true;
        if (atRest < links) {
            level = depth;
            atRest = links;
            headsAtRest = heads;
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
    std::vector<Piece> drained;          // the activity between drained gaps
    std::vector<std::size_t> lastPiece; // of each
    std::int64_t start = pieces.empty() ? 0 : pieces.front().first;
    for (std::size_t g = 0; g < share.size(); ++g) {
        if (share[g] < p.drainedShare || pieces[g + 1].first - pieces[g].second < p.minBoundaryGapNs) continue;
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
