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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism {

namespace packed { // the encoding (packed_segments.cpp)

// The flags byte: the kind in the low 3 bits (7: the kind in the next byte), then what follows.
inline constexpr std::uint8_t kKindEscape = 7;
inline constexpr std::uint8_t kGap = 1 << 3;   // starts after the previous segment's end (else right at it)
inline constexpr std::uint8_t kMicro = 1 << 4; // has a micro-batch
inline constexpr std::uint8_t kPeer = 1 << 5;  // has a peer
inline constexpr std::uint8_t kBytes = 1 << 6; // carries bytes

inline std::uint64_t zigzag(std::uint64_t v) { // of the difference taken modulo 2^64
    return (v << 1) ^ (0 - (v >> 63));
}
inline std::uint64_t unzigzag(std::uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

// Written by pack() alone: no bounds to check.
inline std::uint64_t get(const std::uint8_t*& p) {
    std::uint64_t v = *p & 0x7f;
    for (int shift = 7; *p++ & 0x80; shift += 7) v |= std::uint64_t(*p & 0x7f) << shift;
    return v;
}

} // namespace packed

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

    Segment at(std::size_t i) const;              // std::out_of_range unless i < size(), as vector::at
    void unpack(std::vector<Segment>& out) const; // every segment, replacing `out`'s contents
    // The segments [first, last) that intersect [t0, t1) as JobTimeline::visible finds them (sorted, non-overlapping
    // segments whose longest lasts `maxSegmentNs`), decoded into `out` (replaced); returns `first`.
    std::size_t visible(std::int64_t t0, std::int64_t t1, std::int64_t maxSegmentNs, std::vector<Segment>& out) const;
    // fn(segment) for every segment in order, none held.
    template <typename Fn>
    void forEach(Fn&& fn) const {
        for (std::size_t b = 0; b < m_anchors.size(); ++b)
            decode(b, [&](std::size_t, const Segment& s) {
                fn(s);
                return true;
            });
    }

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

template <typename Fn>
void PackedSegments::decode(std::size_t b, Fn&& fn) const {
    using namespace packed;
    const std::uint8_t* p = m_data.data() + m_anchors[b].offset;
    std::uint64_t prevEnd = std::uint64_t(m_anchors[b].startNs);
    const std::size_t last = std::min(m_count, (b + 1) * kBlock);
    for (std::size_t i = b * kBlock; i < last; ++i) {
        const std::uint8_t flags = *p++;
        Segment s;
        s.kind = SegmentKind((flags & 7) == kKindEscape ? *p++ : flags & 7);
        const std::uint64_t start = flags & kGap ? prevEnd + unzigzag(get(p)) : prevEnd;
        const std::uint64_t end = start + unzigzag(get(p));
        s.startNs = std::int64_t(start);
        s.endNs = std::int64_t(end);
        if (flags & kMicro) s.microBatch = std::uint16_t(get(p));
        if (flags & kPeer) s.peer = std::uint32_t(get(p));
        if (flags & kBytes) s.bytes = get(p);
        prevEnd = end;
        if (!fn(i, s)) return;
    }
}

} // namespace prism
