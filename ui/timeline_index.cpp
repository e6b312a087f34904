#include "timeline_index.h"

#include "util/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

namespace prism::ui {

void TimelineIndex::clear() {
    m_timeline = nullptr;
    m_levels.clear();
    m_bucket0 = 0;
    m_buckets0 = 0;
}

std::size_t TimelineIndex::memoryBytes() const {
    std::size_t n = 0;
    for (const auto& l : m_levels) n += l.capacity() * sizeof(l[0]);
    return n;
}

void TimelineIndex::columnsFromSegments(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out,
                                        std::uint8_t* coverage) const {
    thread_local std::vector<Segment> scratch; // what a frame shows of a row: a packed rank's visible segments
    columnsFromSegments(rank, t0, nsPerPx, width, out, coverage, scratch);
    if (scratch.capacity() > (std::size_t(1) << 16)) std::vector<Segment>().swap(scratch); // not held past 2 MB
}

void TimelineIndex::columnsFromSegments(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out,
                                        std::uint8_t* coverage, std::vector<Segment>& scratch) const {
    std::memset(out, kEmpty, std::size_t(width));
    if (coverage) std::memset(coverage, 0, std::size_t(width));
    if (!m_timeline || width <= 0 || nsPerPx <= 0) return;
    const JobTimeline& tl = *m_timeline;
    const std::int64_t t1 = t0 + std::int64_t(std::ceil(nsPerPx * width));
    const auto segs =
        rank < tl.ranks.size() ? tl.ranks[rank].visibleSegments(t0, t1, scratch) : std::span<const Segment>();
    const double inv = 1.0 / nsPerPx;
    const double w = double(width);

    // The one partially covered column being built: the kind of its largest contributor wins (cheaper than
    // summing per kind, and the same picture), `sum` is its total coverage for the pyramid.
    int cur = -1;
    int best = -1;
    float bestCover = 0, sum = 0;
    auto commit = [&] {
        if (cur < 0 || cur >= width || best < 0) return;
        out[cur] = std::uint8_t(best);
        if (coverage) coverage[cur] = std::uint8_t(std::min(255.0f, sum * 255.0f + 0.5f));
    };
    auto add = [&](int column, int kind, float cover) {
        if (column != cur) {
            commit();
            cur = column;
            best = kind;
            bestCover = cover;
            sum = cover;
            return;
        }
        sum += cover;
        if (cover > bestCover) {
            bestCover = cover;
            best = kind;
        }
    };
    for (const Segment& s : segs) {
        const double xs = std::max(double(s.startNs - t0) * inv, 0.0);
        const double xe = std::min(double(s.endNs - t0) * inv, w);
        if (xe <= xs) continue;
        const int k = int(s.kind);
        const int cs = int(xs);
        const int ce = int(xe); // column holding the end (may be width)
        if (ce == cs) {
            add(cs, k, float(xe - xs));
            continue;
        }
        add(cs, k, float(cs + 1 - xs));
        commit();
        if (ce > cs + 1) {
            std::memset(out + cs + 1, k, std::size_t(ce - cs - 1));
            if (coverage) std::memset(coverage + cs + 1, 255, std::size_t(ce - cs - 1));
            // The first column the segment covers whole is drawn darker, so neighbours stay apart.
            if (xe - xs >= 4.0) out[cs + 1] = std::uint8_t(k | kEdge);
        }
        cur = ce;
        best = k;
        bestCover = sum = float(xe - ce);
        if (bestCover <= 0) best = -1;
    }
    commit();
}

void TimelineIndex::build(const JobTimeline& tl, std::size_t budgetBytes) {
    clear();
    m_timeline = &tl;
    const std::size_t ranks = tl.ranks.size();
    const std::int64_t span = tl.endNs - tl.startNs;
    if (ranks == 0 || span <= 0) return;
    m_origin = tl.startNs;
    // Base buckets: about a quarter of the mean segment, so that below this zoom a row shows at most about
    // width/4 segments on average; capped by the memory budget (a byte per bucket, levels add as much again).
    const std::size_t meanSegs = std::max<std::size_t>(1, tl.segmentCount() / ranks);
    std::size_t n0 = std::max<std::size_t>(64, meanSegs * 4);
    n0 = std::min(n0, std::max<std::size_t>(64, budgetBytes / (ranks * 2)));
    n0 = std::min<std::size_t>(n0, std::size_t(std::max<std::int64_t>(1, span)));
    m_buckets0 = n0;
    m_bucket0 = double(span) / double(n0);

    // Level sizes: n0, then halving (rounded up) down to 2 buckets.
    std::vector<std::size_t> sizes{n0};
    while (sizes.back() > 2) sizes.push_back((sizes.back() + 1) / 2);
    std::vector<std::vector<std::uint8_t>> levels(sizes.size());
    for (std::size_t l = 0; l < sizes.size(); ++l) levels[l].resize(ranks * sizes[l]);

    // Rank by rank (rows are independent), split over the cores: a job of millions of segments is indexed
    // while its session opens. Coarser levels keep the child that covers more; coverage halves the sum so
    // it stays in 0-255.
    auto buildRanks = [&](std::size_t r0, std::size_t r1) {
        std::vector<std::uint8_t> kinds(n0), cover(n0);
        std::vector<Segment> scratch; // a packed rank's segments, each whole in turn
        for (std::size_t r = r0; r < r1; ++r) {
            columnsFromSegments(r, m_origin, m_bucket0, int(n0), kinds.data(), cover.data(), scratch);
            std::uint8_t* k0row = &levels[0][r * n0];
            for (std::size_t b = 0; b < n0; ++b) {
                const std::uint8_t k = kinds[b];
                k0row[b] = k == kEmpty ? kEmpty : std::uint8_t(k & kKindMask);
                if (k == kEmpty) cover[b] = 0;
            }
            for (std::size_t l = 1; l < sizes.size(); ++l) {
                const std::size_t n = sizes[l - 1], m = sizes[l];
                const std::uint8_t* ak = &levels[l - 1][r * n];
                std::uint8_t* out = &levels[l][r * m];
                for (std::size_t b = 0; b < m; ++b) {
                    const std::size_t i = 2 * b, j = std::min(2 * b + 1, n - 1);
                    const std::uint8_t ka = ak[i], kb = ak[j];
                    const unsigned c0 = cover[i], c1 = j == i ? 0 : cover[j];
                    std::uint8_t kk;
                    if (ka == kb || kb == kEmpty || c1 == 0)
                        kk = ka;
                    else if (ka == kEmpty || c0 == 0)
                        kk = kb;
                    else
                        kk = c0 >= c1 ? ka : kb;
                    out[b] = kk;
                    cover[b] = std::uint8_t((c0 + c1 + 1) / 2); // b <= i: in place
                }
            }
        }
    };
    const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1,
                                                        std::clamp<std::size_t>(ranks / 64, 1, 8));
    parallelFor(threads, unsigned(threads),
                [&](std::size_t t, unsigned) { buildRanks(ranks * t / threads, ranks * (t + 1) / threads); });
    m_levels = std::move(levels);
}

void TimelineIndex::columns(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out) const {
    if (m_levels.empty() || nsPerPx < m_bucket0) {
        columnsFromSegments(rank, t0, nsPerPx, width, out);
        return;
    }
    int level = std::min(int(std::floor(std::log2(nsPerPx / m_bucket0))), int(m_levels.size()) - 1);
    level = std::max(level, 0);
    std::size_t n = m_buckets0;
    for (int l = 0; l < level; ++l) n = (n + 1) / 2;
    const double bl = std::ldexp(m_bucket0, level); // the last bucket of a level may be only partly used
    const std::uint8_t* row = m_levels[std::size_t(level)].data() + rank * n;
    // Sample the bucket at the centre of each column: at this level a column spans 1-2 buckets, and each
    // bucket already holds the dominant kind of its span. Positions in 32.32 fixed point (a tight loop).
    const double step = nsPerPx / bl;
    const double pos0 = (double(t0 - m_origin) + 0.5 * nsPerPx) / bl;
    const double nn = double(n);
    // Columns whose centre falls inside the job: x in [xa, xb).
    const int xa = int(std::clamp(std::ceil(-pos0 / step), 0.0, double(width)));
    const int xb = int(std::clamp(std::ceil((nn - pos0) / step), double(xa), double(width)));
    std::memset(out, kEmpty, std::size_t(xa));
    std::memset(out + xb, kEmpty, std::size_t(width - xb));
    std::uint64_t p = std::uint64_t(std::max(0.0, pos0 + xa * step) * 4294967296.0);
    const std::uint64_t dp = std::uint64_t(step * 4294967296.0);
    const std::size_t last = n - 1;
    for (int x = xa; x < xb; ++x, p += dp) out[x] = row[std::min<std::size_t>(p >> 32, last)];
}

} // namespace prism::ui
