#include "analysis/packed_segments.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace prism {

namespace {

using namespace packed;

std::uint8_t* put(std::uint8_t* p, std::uint64_t v) {
    while (v >= 0x80) {
        *p++ = std::uint8_t(v) | 0x80;
        v >>= 7;
    }
    *p++ = std::uint8_t(v);
    return p;
}

} // namespace

void PackedSegments::clear() {
    std::vector<std::uint8_t>().swap(m_data);
    std::vector<Anchor>().swap(m_anchors);
    m_count = 0;
}

void PackedSegments::pack(const std::vector<Segment>& segments) {
    clear();
    m_count = segments.size();
    if (segments.empty()) return;
    m_anchors.reserve((segments.size() + kBlock - 1) / kBlock);
    // Written through a pointer into a buffer with room for the longest encoding (flags, kind, five varints of
    // up to 10 bytes), then copied once at its size: byte by byte into a vector costs more than the encoding.
    constexpr std::size_t kMost = 2 + 5 * 10;
    thread_local std::unique_ptr<std::uint8_t[]> buffer;
    thread_local std::size_t room = 0;
    if (room < segments.size() * kMost) {
        room = segments.size() * kMost;
        buffer = std::make_unique_for_overwrite<std::uint8_t[]>(room);
    }
    std::uint8_t* const begin = buffer.get();
    std::uint8_t* p = begin;
    std::uint64_t prevEnd = 0;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const Segment& s = segments[i];
        if (i % kBlock == 0) {
            m_anchors.push_back({s.startNs, std::uint64_t(p - begin)});
            prevEnd = std::uint64_t(s.startNs);
        }
        const std::uint64_t start = std::uint64_t(s.startNs), end = std::uint64_t(s.endNs);
        const auto kind = std::uint8_t(s.kind);
        std::uint8_t flags = kind < kKindEscape ? kind : kKindEscape;
        if (start != prevEnd) flags |= kGap;
        if (s.microBatch != kNoMicroBatch) flags |= kMicro;
        if (s.peer != kNoIndex) flags |= kPeer;
        if (s.bytes != 0) flags |= kBytes;
        *p++ = flags;
        if (kind >= kKindEscape) *p++ = kind;
        if (flags & kGap) p = put(p, zigzag(start - prevEnd));
        p = put(p, zigzag(end - start));
        if (flags & kMicro) p = put(p, s.microBatch);
        if (flags & kPeer) p = put(p, s.peer);
        if (flags & kBytes) p = put(p, s.bytes);
        prevEnd = end;
    }
    m_data.assign(begin, p); // at its size: held as long as the job is shown
    if (room > (std::size_t(16) << 20)) { // a rank of more than some 300,000 segments: not kept for the next
        buffer.reset();
        room = 0;
    }
}

std::size_t PackedSegments::memoryBytes() const { return m_data.capacity() + m_anchors.capacity() * sizeof(Anchor); }

Segment PackedSegments::at(std::size_t i) const {
    if (i >= m_count) throw std::out_of_range("PackedSegments::at");
    Segment out;
    decode(i / kBlock, [&](std::size_t k, const Segment& s) {
        if (k < i) return true;
        out = s;
        return false;
    });
    return out;
}

void PackedSegments::unpack(std::vector<Segment>& out) const {
    out.clear();
    out.reserve(m_count);
    for (std::size_t b = 0; b < m_anchors.size(); ++b)
        decode(b, [&](std::size_t, const Segment& s) {
            out.push_back(s);
            return true;
        });
}

std::size_t PackedSegments::visible(std::int64_t t0, std::int64_t t1, std::int64_t maxSegmentNs,
                                    std::vector<Segment>& out) const {
    out.clear();
    if (m_count == 0 || t1 <= t0) return 0;
    // As JobTimeline::visible: the first segment starting at or after t0 - longest, past those ending by t0, up to
    // the first starting at or after t1. The block holding the first: the last whose first segment starts before.
    const std::int64_t from = t0 - maxSegmentNs;
    auto it = std::lower_bound(m_anchors.begin(), m_anchors.end(), from,
                               [](const Anchor& a, std::int64_t t) { return a.startNs < t; });
    std::size_t b = it == m_anchors.begin() ? 0 : std::size_t(it - m_anchors.begin()) - 1;
    std::size_t first = m_count;
    bool done = false;
    for (; b < m_anchors.size() && !done; ++b)
        decode(b, [&](std::size_t i, const Segment& s) {
            if (first == m_count) {
                if (s.startNs < from || s.endNs <= t0) return true;
                first = i;
            }
            if (s.startNs >= t1) {
                done = true;
                return false;
            }
            out.push_back(s);
            return true;
        });
    return first == m_count ? m_count : first;
}

} // namespace prism
