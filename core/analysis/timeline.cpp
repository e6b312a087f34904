#include "analysis/timeline.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace prism {

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

std::pair<std::size_t, std::size_t> JobTimeline::visible(std::size_t rank, std::int64_t t0, std::int64_t t1) const {
    const RankTimeline& r = ranks[rank];
    const auto& s = r.segments;
    // Segments are sorted by start and do not overlap, so the first visible one starts after t0 - longest.
    auto first = std::lower_bound(s.begin(), s.end(), t0 - r.maxSegmentNs,
                                  [](const Segment& seg, std::int64_t t) { return seg.startNs < t; });
    while (first != s.end() && first->endNs <= t0) ++first;
    auto last = std::lower_bound(first, s.end(), t1, [](const Segment& seg, std::int64_t t) { return seg.startNs < t; });
    return {std::size_t(first - s.begin()), std::size_t(last - s.begin())};
}

int JobTimeline::stepAt(std::int64_t t) const {
    auto it = std::upper_bound(steps.begin(), steps.end(), t,
                               [](std::int64_t v, const StepInfo& st) { return v < st.endNs; });
    if (it == steps.end() || t < it->startNs) return -1;
    return int(it - steps.begin());
}

std::size_t JobTimeline::segmentCount() const {
    std::size_t n = 0;
    for (const auto& r : ranks) n += r.segments.size();
    return n;
}

JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& par, const std::vector<StepInfo>& steps) {
    JobTimeline tl;
    tl.steps = steps;
    tl.startNs = job.startNs;
    tl.endNs = job.endNs;

    // Stage and DP group of each NIC.
    std::unordered_map<EndpointId, int> stage, group;
    for (std::size_t c = 0; c < par.ppChains.size(); ++c)
        for (std::size_t s = 0; s < par.ppChains[c].size(); ++s) stage[par.ppChains[c][s]] = int(s);
    for (std::size_t g = 0; g < par.dpGroups.size(); ++g)
        for (EndpointId e : par.dpGroups[g]) group[e] = int(g);
    std::vector<EndpointId> order = job.nics;
    std::stable_sort(order.begin(), order.end(), [&](EndpointId a, EndpointId b) {
        return std::pair(stage[a], group[a]) < std::pair(stage[b], group[b]);
    });
    std::unordered_map<EndpointId, std::uint32_t> rankOf;
    for (EndpointId e : order) {
        RankTimeline r;
        r.nic = e;
        r.ip = flows.endpoints.at(e).toString();
        r.label = topology.rankLabel(flows.endpoints.at(e));
        r.stage = stage[e];
        r.dpGroup = group[e];
        rankOf.emplace(e, std::uint32_t(tl.ranks.size()));
        tl.ranks.push_back(std::move(r));
    }
    std::unordered_map<std::uint64_t, PairKind> kindOf;
    for (const PairInfo& p : par.pairs) kindOf[(std::uint64_t(p.a) << 32) | p.b] = p.kind;

    // Raw transfer segments per rank (records are in start order).
    std::vector<std::vector<Segment>> raw(tl.ranks.size());
    for (std::uint32_t r : job.records) {
        EndpointId s = flows.src[r], d = flows.dst[r];
        auto it = kindOf.find((std::uint64_t(std::min(s, d)) << 32) | std::max(s, d));
        PairKind kind = it == kindOf.end() ? PairKind::PP : it->second;
        std::uint32_t rs = rankOf.at(s), rd = rankOf.at(d);
        Segment seg{flows.startNs[r], std::max(flows.endNs[r], flows.startNs[r] + 1), SegmentKind::DpSync, rd, 0xFFFFFFFFu,
                    flows.bytes[r]};
        if (kind == PairKind::DP) {
            raw[rs].push_back(seg);
            seg.peer = rs;
            raw[rd].push_back(seg);
        } else {
            seg.kind = SegmentKind::PpSend;
            raw[rs].push_back(seg);
            seg.kind = SegmentKind::PpRecv;
            seg.peer = rs;
            raw[rd].push_back(seg);
        }
    }
    // Merge overlapping transfers (channels, both directions) into non-overlapping segments: a segment
    // extends the previous one of the same kind and peer; otherwise it starts where the previous ended.
    // The gaps between transfers inside the job's span are compute.
    for (std::size_t k = 0; k < tl.ranks.size(); ++k) {
        auto& in = raw[k];
        std::stable_sort(in.begin(), in.end(), [](const Segment& a, const Segment& b) { return a.startNs < b.startNs; });
        std::vector<Segment>& out = tl.ranks[k].segments;
        std::int64_t cursor = job.startNs;
        for (Segment seg : in) {
            if (!out.empty() && out.back().kind != SegmentKind::Compute && out.back().kind == seg.kind &&
                out.back().peer == seg.peer && seg.startNs <= out.back().endNs) {
                out.back().endNs = std::max(out.back().endNs, seg.endNs);
                out.back().bytes += seg.bytes;
                cursor = std::max(cursor, out.back().endNs);
                continue;
            }
            if (seg.endNs <= cursor) {
                if (!out.empty()) out.back().bytes += seg.bytes;
                continue;
            }
            seg.startNs = std::max(seg.startNs, cursor);
            if (seg.startNs > cursor)
                out.push_back({cursor, seg.startNs, SegmentKind::Compute, 0xFFFFFFFFu, 0xFFFFFFFFu, 0});
            out.push_back(seg);
            cursor = seg.endNs;
        }
        for (Segment& seg : out) {
            int st = tl.stepAt(seg.startNs);
            seg.step = st < 0 ? 0xFFFFFFFFu : std::uint32_t(st);
            tl.ranks[k].maxSegmentNs = std::max(tl.ranks[k].maxSegmentNs, seg.endNs - seg.startNs);
        }
    }
    return tl;
}

} // namespace prism
