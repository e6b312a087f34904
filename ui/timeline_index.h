#pragma once
// Level of detail for the Gantt view. A frame reduces each row to one value per pixel column (the segment
// kind covering most of that column), so it never draws more than one rect per pixel column per row.
//
// Zoomed in (a column shorter than a base bucket), the visible segments are found by binary search and
// streamed into columns. Zoomed out, walking every segment would cost O(segments) per frame (4M segments:
// 160 MB of memory traffic), so a pyramid built once per job answers instead: per rank, the dominant kind
// per time bucket at bucket widths B0·2^level; a frame reads 1-2 buckets per column at the level whose
// bucket matches the column width. Cost per row: O(columns) zoomed out, O(log n + visible segments) in.
#include "analysis/timeline.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism::ui {

class TimelineIndex {
public:
    static constexpr std::uint8_t kEmpty = 0xFF; // no segment in the column
    static constexpr std::uint8_t kEdge = 0x40;  // flag: first column of a segment wide enough to outline
    static constexpr std::uint8_t kKindMask = 0x0F;

    // Builds the pyramid. `budgetBytes` bounds its memory (a byte per bucket; the coarser levels add as much again).
    void build(const JobTimeline& timeline, std::size_t budgetBytes = std::size_t(64) << 20);
    void clear();
    bool built() const { return m_timeline != nullptr; }
    const JobTimeline* timeline() const { return m_timeline; }

    // Writes the kind of each column x in [0, width) of `rank`, where column x covers
    // [t0 + x·nsPerPx, t0 + (x+1)·nsPerPx). Values are a SegmentKind, possibly | kEdge, or kEmpty.
    void columns(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out) const;
    // The same without the pyramid (always from segments): the reference the pyramid is tested against.
    void columnsFromSegments(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out,
                             std::uint8_t* coverage = nullptr) const;
    // The same, a packed rank's segments decoded into `scratch`.
    void columnsFromSegments(std::size_t rank, std::int64_t t0, double nsPerPx, int width, std::uint8_t* out,
                             std::uint8_t* coverage, std::vector<Segment>& scratch) const;

    double baseBucketNs() const { return m_bucket0; }
    int levels() const { return int(m_levels.size()); }
    std::size_t memoryBytes() const;

private:
    const JobTimeline* m_timeline = nullptr;
    std::int64_t m_origin = 0;
    double m_bucket0 = 0;       // ns per bucket at level 0
    std::size_t m_buckets0 = 0; // buckets per rank at level 0
    // Level l: ranks × ceil(m_buckets0 / 2^l) dominant kinds (or kEmpty), row by row.
    std::vector<std::vector<std::uint8_t>> m_levels;
};

} // namespace prism::ui
