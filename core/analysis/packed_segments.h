#pragma once
// A rank's timeline segments packed in memory: what the GUI holds of every job it shows (docs/ENGINE.md
// "Segments in memory"). A Segment is 32 bytes; packed, a compute or waiting gap takes about 4 bytes and a
// transfer about 10 (on `large`, 8.6M segments: 275 MB unpacked), and any part is decoded on demand.
//
// Blocks of kBlock segments, each decoded on its own from its anchor (the byte where it starts and its first
// segment's start), so that the segments of a time range are found by a binary search over the anchors and
// decoded alone, and segment i by decoding its block. Within a block a segment is a byte of flags and kind,
// then LEB128 varints: its start after the previous one's end (when it does not start there), its duration,
// and its micro-batch, peer and bytes when it has them. Differences are taken modulo 2^64 and zig-zagged, so
// that any segment, even one out of order, comes back as it went in.
#include "analysis/segment.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism {

class PackedSegments {
public:
    static constexpr std::size_t kBlock = 64;

    PackedSegments() = default;
    explicit PackedSegments(const std::vector<Segment>& segments) { pack(segments); }
    void pack(const std::vector<Segment>& segments); // replaces what was held
    void clear();

    std::size_t size() const { return m_count; }
    bool empty() const { return m_count == 0; }
    std::size_t memoryBytes() const; // what it holds, capacity included

    Segment at(std::size_t i) const;              // i < size()
    void unpack(std::vector<Segment>& out) const; // every segment, replacing `out`'s contents
    // The segments [first, last) that intersect [t0, t1) as JobTimeline::visible finds them (sorted, non-overlapping
    // segments whose longest lasts `maxSegmentNs`), decoded into `out` (replaced); returns `first`.
    std::size_t visible(std::int64_t t0, std::int64_t t1, std::int64_t maxSegmentNs, std::vector<Segment>& out) const;

private:
    struct Anchor {
        std::int64_t startNs;
        std::uint64_t offset; // into m_data
    };
    // Decodes block b's segments in order, calling fn(index, segment) until it returns false.
    template <typename Fn>
    void decode(std::size_t b, Fn&& fn) const;

    std::vector<std::uint8_t> m_data;
    std::vector<Anchor> m_anchors;
    std::size_t m_count = 0;
};

} // namespace prism
