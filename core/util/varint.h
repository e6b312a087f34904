#pragma once
// LEB128 varints and zig-zag: the session file's blobs (core/store), a job's record list held packed
// (RecognizedJob::packRecords). The reader is bounds checked: a damaged blob gives an error, never a read past
// its end.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prism {

inline void putVarint(std::string& out, std::uint64_t v) {
    char buf[10];
    int n = 0;
    while (v >= 0x80) {
        buf[n++] = char(std::uint8_t(v) | 0x80);
        v >>= 7;
    }
    buf[n++] = char(v);
    out.append(buf, std::size_t(n));
}

// Appends varints to a string through a raw pointer into an uninitialized buffer with room for `maxValues`,
// copied to the string when the writer goes away (string::append per value, or a zero-filled worst-case
// resize, cost more than the encoding itself).
class VarintWriter {
public:
    VarintWriter(std::string& out, std::size_t maxValues)
        : m_out(out), m_buf(std::make_unique_for_overwrite<std::uint8_t[]>(maxValues * 10 + 1)), m_p(m_buf.get()) {}
    ~VarintWriter() { m_out.append(reinterpret_cast<const char*>(m_buf.get()), std::size_t(m_p - m_buf.get())); }
    VarintWriter(const VarintWriter&) = delete;
    VarintWriter& operator=(const VarintWriter&) = delete;

    void put(std::uint64_t v) {
        while (v >= 0x80) {
            *m_p++ = std::uint8_t(v) | 0x80;
            v >>= 7;
        }
        *m_p++ = std::uint8_t(v);
    }
    void putSigned(std::int64_t v) { put((std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63)); }

private:
    std::string& m_out;
    std::unique_ptr<std::uint8_t[]> m_buf;
    std::uint8_t* m_p;
};

inline std::uint64_t zigzag(std::int64_t v) { return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63); }
inline std::int64_t unzigzag(std::uint64_t v) { return std::int64_t(v >> 1) ^ -std::int64_t(v & 1); }
inline void putSigned(std::string& out, std::int64_t v) { putVarint(out, zigzag(v)); }

// Appends a list of indices as the differences of successive ones (the first from 0), zig-zagged, as varints:
// a session's job_records ("delta-zigzag-varint"), a job's record list held packed. Sized exactly first (a
// writer's worst-case buffer would be 10 bytes a value beside the list).
inline void appendIndexDeltas(std::span<const std::uint32_t> list, std::string& out) {
    auto length = [](std::uint64_t v) {
        std::size_t n = 1;
        while (v >= 0x80) v >>= 7, ++n;
        return n;
    };
    std::size_t bytes = 0;
    std::int64_t prev = 0;
    for (std::uint32_t v : list) bytes += length(zigzag(std::int64_t(v) - prev)), prev = v;
    const std::size_t at = out.size();
    out.resize(at + bytes);
    auto* p = reinterpret_cast<std::uint8_t*>(out.data() + at);
    prev = 0;
    for (std::uint32_t v : list) {
        std::uint64_t z = zigzag(std::int64_t(v) - prev);
        prev = v;
        for (; z >= 0x80; z >>= 7) *p++ = std::uint8_t(z) | 0x80;
        *p++ = std::uint8_t(z);
    }
}

struct VarintReader {
    const std::uint8_t* p;
    const std::uint8_t* end;
    bool ok = true;

    explicit VarintReader(std::string_view data)
        : p(reinterpret_cast<const std::uint8_t*>(data.data())), end(p + data.size()) {}

    std::uint64_t next() {
        if (end - p >= 10) { // a whole varint fits: no bounds check per byte
            std::uint64_t b = *p++;
            if (b < 0x80) return b;
            std::uint64_t v = b & 0x7f;
            for (int shift = 7; shift < 70; shift += 7) {
                b = *p++;
                v |= (b & 0x7f) << shift;
                if (b < 0x80) return v;
            }
            ok = false;
            return 0;
        }
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p == end) {
                ok = false;
                return 0;
            }
            std::uint8_t b = *p++;
            v |= std::uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        ok = false; // more than 10 bytes: not a varint
        return 0;
    }
    std::int64_t nextSigned() { return unzigzag(next()); }
    bool atEnd() const { return p == end; }
};

} // namespace prism
