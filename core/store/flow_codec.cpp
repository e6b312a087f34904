#include "store/flow_codec.h"

#include "util/varint.h"

#include <cstring>

namespace prism::store {
namespace {

template <typename T, typename F>
std::string decodeInto(std::string_view data, std::size_t count, T* out, F convert) {
    VarintReader r(data);
    for (std::size_t i = 0; i < count; ++i) {
        std::uint64_t v = r.next();
        if (!r.ok) return "the data ends after " + std::to_string(i) + " of " + std::to_string(count) + " values";
        if (!convert(v, i, out[i])) return "value " + std::to_string(i) + " is out of range";
    }
    if (r.p != r.end) return "extra data after " + std::to_string(count) + " values";
    return {};
}

} // namespace

void setHigh(CountColumn& column, const WideCounts::Chunk& chunk) {
    column.widen();
    std::copy(chunk.high.begin(), chunk.high.end(), column.high() + chunk.first);
}

const char* flowColumnName(FlowColumn c) {
    static const char* kNames[kFlowColumnCount] = {"start_ns", "duration_ns", "src", "dst",    "src_port",
                                                   "dst_port", "proto",       "bytes", "packets"};
    return kNames[int(c)];
}

const char* flowColumnEncoding(FlowColumn c, std::size_t endpoints) {
    switch (c) {
    case FlowColumn::StartNs: return "delta-zigzag-varint";
    case FlowColumn::DurationNs: return "zigzag-varint";
    case FlowColumn::Src:
    case FlowColumn::Dst: return endpoints <= 0x10000 ? "u16" : "varint";
    case FlowColumn::SrcPort:
    case FlowColumn::DstPort: return "u16";
    case FlowColumn::Proto: return "u8";
    case FlowColumn::Bytes:
    case FlowColumn::Packets: return "varint";
    }
    return "?";
}

bool flowEncodingKnown(FlowColumn c, std::string_view encoding) {
    if (c == FlowColumn::Src || c == FlowColumn::Dst) return encoding == "u16" || encoding == "varint";
    return encoding == flowColumnEncoding(c, 0);
}

bool parseFlowColumn(std::string_view name, FlowColumn& out) {
    for (int i = 0; i < kFlowColumnCount; ++i)
        if (name == flowColumnName(FlowColumn(i))) {
            out = FlowColumn(i);
            return true;
        }
    return false;
}

void encodeFlowColumn(const FlowTable& f, FlowColumn c, std::size_t first, std::size_t count, std::string& out) {
    const std::size_t end = first + count;
    const std::string_view encoding = flowColumnEncoding(c, f.endpoints.size());
    auto u16 = [&](const auto& column) {
        const std::size_t at = out.size();
        out.resize(at + 2 * count);
        auto* p = reinterpret_cast<std::uint8_t*>(out.data() + at);
        for (std::size_t i = first; i < end; ++i, p += 2) {
            p[0] = std::uint8_t(column[i]);
            p[1] = std::uint8_t(column[i] >> 8);
        }
    };
    if (c == FlowColumn::Proto) {
        out.append(reinterpret_cast<const char*>(f.proto.data() + first), count);
        return;
    }
    if (encoding == "u16") {
        switch (c) {
        case FlowColumn::Src: u16(f.src); return;
        case FlowColumn::Dst: u16(f.dst); return;
        case FlowColumn::SrcPort: u16(f.srcPort); return;
        case FlowColumn::DstPort: u16(f.dstPort); return;
        default: return;
        }
    }
    VarintWriter w(out, count);
    auto all = [&](const auto& column) {
        for (std::size_t i = first; i < end; ++i) w.put(column[i]);
    };
    switch (c) {
    case FlowColumn::StartNs: {
        std::uint64_t prev = 0; // each chunk starts from 0, so chunks decode independently
        for (std::size_t i = first; i < end; ++i) {
            w.putSigned(std::int64_t(std::uint64_t(f.startNs[i]) - prev));
            prev = std::uint64_t(f.startNs[i]);
        }
        break;
    }
    case FlowColumn::DurationNs:
        for (std::size_t i = first; i < end; ++i) w.putSigned(std::int64_t(f.durationNs[i]));
        break;
    case FlowColumn::Src: all(f.src); break;
    case FlowColumn::Dst: all(f.dst); break;
    case FlowColumn::Bytes: all(f.bytes); break;
    case FlowColumn::Packets: all(f.packets); break;
    default: break;
    }
}

std::string decodeFlowColumn(FlowColumn c, std::string_view encoding, std::string_view data, std::size_t first,
                             std::size_t count, std::size_t endpoints, FlowTable& f, WideCounts* wide) {
    if (first + count > f.size()) return "the chunk lies outside the table";
    if (!flowEncodingKnown(c, encoding)) return "unknown encoding \"" + std::string(encoding) + "\"";
    if (encoding == "u16") {
        if (data.size() != 2 * count)
            return "expected " + std::to_string(2 * count) + " bytes, found " + std::to_string(data.size());
        auto p = reinterpret_cast<const std::uint8_t*>(data.data());
        auto widen = [&](auto* out) {
            for (std::size_t i = 0; i < count; ++i) out[i] = std::uint16_t(p[2 * i] | p[2 * i + 1] << 8);
        };
        switch (c) {
        case FlowColumn::Src:
        case FlowColumn::Dst: {
            IdColumn& ids = c == FlowColumn::Src ? f.src : f.dst;
            std::uint16_t* out = ids.low() + first;
            widen(out);
            if (ids.wide()) std::fill_n(ids.high() + first, count, std::uint16_t(0));
            for (std::size_t i = 0; i < count; ++i)
                if (out[i] >= endpoints) return "value " + std::to_string(i) + " is out of range";
            return {};
        }
        case FlowColumn::SrcPort: widen(f.srcPort.data() + first); return {};
        case FlowColumn::DstPort: widen(f.dstPort.data() + first); return {};
        default: return "unknown encoding";
        }
    }
    switch (c) {
    case FlowColumn::StartNs: {
        std::uint64_t acc = 0;
        return decodeInto(data, count, f.startNs.data() + first, [&](std::uint64_t v, std::size_t, std::int64_t& o) {
            acc += std::uint64_t(unzigzag(v));
            o = std::int64_t(acc);
            return true;
        });
    }
    case FlowColumn::Src:
    case FlowColumn::Dst: { // ids of 2^16 or more need the column widened first (by the caller, see the header)
        IdColumn& ids = c == FlowColumn::Src ? f.src : f.dst;
        return decodeInto(data, count, ids.low() + first, [&](std::uint64_t v, std::size_t i, std::uint16_t& o) {
            o = std::uint16_t(v);
            if (ids.wide()) ids.high()[first + i] = std::uint16_t(v >> 16);
            else if (v >> 16) return false;
            return v < endpoints;
        });
    }
    case FlowColumn::SrcPort:
    case FlowColumn::DstPort:
        return decodeInto(data, count, (c == FlowColumn::SrcPort ? f.srcPort : f.dstPort).data() + first,
                          [](std::uint64_t v, std::size_t, std::uint16_t& o) {
                              o = std::uint16_t(v);
                              return v <= 0xffff;
                          });
    case FlowColumn::Proto:
        if (data.size() != count)
            return "expected " + std::to_string(count) + " bytes, found " + std::to_string(data.size());
        std::memcpy(f.proto.data() + first, data.data(), count);
        return {};
    case FlowColumn::DurationNs: // end - start modulo 2^64, as the table holds it
    case FlowColumn::Bytes:
    case FlowColumn::Packets: {
        const bool duration = c == FlowColumn::DurationNs;
        CountColumn& column = duration ? f.durationNs : c == FlowColumn::Bytes ? f.bytes : f.packets;
        WideCounts::Chunk found{first, {}}; // the chunk's high halves, every row's once one is met
        std::string err =
            decodeInto(data, count, column.low() + first, [&](std::uint64_t v, std::size_t i, std::uint32_t& o) {
                if (duration) v = std::uint64_t(unzigzag(v));
                o = std::uint32_t(v);
                if (v >> 32) {
                    if (found.high.empty()) found.high.assign(count, 0);
                    found.high[i] = std::uint32_t(v >> 32);
                }
                return true;
            });
        if (found.high.empty()) return err;
        if (wide)
            (duration                 ? wide->durations
             : c == FlowColumn::Bytes ? wide->bytes
                                      : wide->packets)
                .push_back(std::move(found));
        else setHigh(column, found);
        return err;
    }
    }
    return "unknown column";
}

void encodeIndexList(std::span<const std::uint32_t> list, std::string& out) { appendIndexDeltas(list, out); }

std::string decodeIndexList(std::string_view data, std::size_t count, std::size_t limit,
                            std::vector<std::uint32_t>& out) {
    if (count > data.size())
        return "expected " + std::to_string(count) + " values in " + std::to_string(data.size()) + " bytes";
    out.resize(count);
    std::uint64_t acc = 0; // unsigned: damaged deltas wrap instead of overflowing, then fail the range check
    return decodeInto(data, count, out.data(), [&](std::uint64_t v, std::size_t, std::uint32_t& o) {
        acc += std::uint64_t(unzigzag(v));
        o = std::uint32_t(acc);
        return acc < limit;
    });
}

} // namespace prism::store
