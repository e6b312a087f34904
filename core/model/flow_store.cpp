// TableStore: the FlowStore answers computed from a FlowTable in memory; measureResolution.
#include "model/flow_store.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace prism {

TimeResolution measureResolution(const FlowTable& flows) {
    // The median span is selected digit by digit (16 bits a pass: a histogram of the spans that share the digits
    // found so far), not from a copy of every span: 8 bytes a record at the end of an analysis, its peak.
    TimeResolution r;
    const std::size_t n = flows.size();
    bool anyRoce = false;
    for (std::size_t i = 0; i < n && !anyRoce; ++i) anyRoce = flows.isRoce(i);
    auto counted = [&](std::size_t i) { return !anyRoce || flows.isRoce(i); };
    // Spans as unsigned keys in their order (a span below zero, end before start, sorts first).
    constexpr std::uint64_t kSign = std::uint64_t(1) << 63;
    auto key = [&](std::size_t i) -> std::uint64_t { return flows.durationNs[i] ^ kSign; };
    std::int64_t granularity = 1'000'000'000;
    std::uint64_t lo = ~std::uint64_t(0), hi = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!counted(i)) continue;
        ++r.records;
        lo = std::min(lo, key(i));
        hi = std::max(hi, key(i));
        // The coarsest unit every start is a multiple of.
        while (granularity > 1 && flows.startNs[i] % granularity != 0) granularity /= 1000;
    }
    if (r.records == 0) return r;
    r.stampGranularityNs = granularity;
    // The upper median: the span of rank records / 2 among the keys - lo, found from the top digit down.
    std::size_t rank = r.records / 2;
    const std::uint64_t range = hi - lo;
    int shift = 0;
    while (shift < 64 && (range >> shift) >= 65536) shift += 16;
    std::uint64_t prefix = 0; // the digits above `shift` found so far (of key - lo)
    std::vector<std::size_t> count(65536);
    for (;; shift -= 16) {
        std::fill(count.begin(), count.end(), 0);
        const std::uint64_t above = shift + 16 >= 64 ? 0 : ~std::uint64_t(0) << (shift + 16);
        for (std::size_t i = 0; i < n; ++i) {
            if (!counted(i)) continue;
            const std::uint64_t k = key(i) - lo;
            if ((k & above) == prefix) ++count[(k >> shift) & 0xFFFF];
        }
        std::size_t digit = 0;
        while (rank >= count[digit]) rank -= count[digit++];
        prefix |= std::uint64_t(digit) << shift;
        if (shift == 0) break;
    }
    r.typicalSpanNs = std::int64_t((prefix + lo) ^ kSign);
    if (r.typicalSpanNs > 0) {
        std::size_t near = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (!counted(i)) continue;
            const auto sp = std::int64_t(flows.durationNs[i]); // (end - start, never overflowing)
            near += sp >= r.typicalSpanNs - r.typicalSpanNs / 10 && sp <= r.typicalSpanNs + r.typicalSpanNs / 10;
        }
        r.fixedSpan = near * 2 > r.records;
    }
    return r;
}

StoreOverview TableStore::overview() {
    std::vector<bool> roce;
    return overview(roce);
}

StoreOverview TableStore::overview(std::vector<bool>& roceEndpoint) const {
    // One pass: every figure, and the endpoints seen (a byte each: 1 in a record, 2 in a RoCE record).
    StoreOverview o;
    const FlowTable& f = m_flows;
    o.records = f.size();
    std::vector<std::uint8_t> seen(f.endpoints.size(), 0);
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    std::int64_t roceFirst = first, roceLast = last;
    for (std::size_t i = 0; i < f.size(); ++i) {
        const std::int64_t s = f.startNs[i], e = f.end(i);
        first = std::min(first, s);
        last = std::max(last, e);
        if (!f.isRoce(i)) {
            seen[f.src[i]] |= 1;
            seen[f.dst[i]] |= 1;
            ++o.otherRecords;
            o.otherBytes += f.bytes[i];
            continue;
        }
        seen[f.src[i]] |= 3;
        seen[f.dst[i]] |= 3;
        ++o.roceRecords;
        o.roceBytes += f.bytes[i];
        roceFirst = std::min(roceFirst, s);
        roceLast = std::max(roceLast, e);
    }
    o.endpoints = std::uint64_t(std::count_if(seen.begin(), seen.end(), [](std::uint8_t x) { return x != 0; }));
    roceEndpoint.assign(seen.size(), false);
    for (std::size_t e = 0; e < seen.size(); ++e) roceEndpoint[e] = (seen[e] & 2) != 0;
    if (o.roceRecords) {
        o.roceFirstNs = roceFirst;
        o.roceLastNs = roceLast;
    }
    if (!f.empty()) {
        o.firstNs = first;
        o.lastNs = last;
    }
    return o;
}

std::size_t RoceGroups::KeyHash::operator()(const Key& k) const {
    std::uint64_t h = (std::uint64_t(k.src) << 32 | k.dst) * 0x9E3779B97F4A7C15ull;
    return std::size_t(h ^ (h >> 29) ^ (std::uint64_t(k.bin) * 0xC2B2AE3D27D4EB4Full) ^ k.port);
}

void RoceGroups::add(EndpointId src, EndpointId dst, std::uint16_t port, std::int64_t start, std::int64_t end,
                     std::uint64_t bytes) {
    const Key key{src, dst, port, (start - m_lo) / m_width};
    auto [it, inserted] = m_index.try_emplace(key, m_groups.size());
    if (inserted) m_groups.push_back({key, start, end});
    Group& g = m_groups[it->second];
    g.first = std::min(g.first, start);
    g.last = std::max(g.last, end);
    g.bytes += bytes;
    ++g.records;
}

FlowTable RoceGroups::table(const EndpointTable& endpoints) const {
    std::vector<std::uint32_t> order(m_groups.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        const Group &A = m_groups[a], &B = m_groups[b];
        return A.first != B.first ? A.first < B.first : A.last < B.last;
    });
    FlowTable out;
    out.reserve(m_groups.size());
    for (std::uint32_t k : order) {
        const Group& g = m_groups[k];
        const EndpointId s = out.endpoints.intern(endpoints.at(g.key.src));
        const EndpointId d = out.endpoints.intern(endpoints.at(g.key.dst));
        out.append(g.first, g.last, s, d, g.key.port, kRoceV2Port, kProtoUdp, g.bytes, g.records);
    }
    return out;
}

FlowTable TableStore::groupedRoce(std::int64_t lo, std::int64_t width) {
    const FlowTable& f = m_flows;
    RoceGroups groups(lo, width);
    for (std::size_t i = 0; i < f.size(); ++i)
        if (f.isRoce(i)) groups.add(f.src[i], f.dst[i], f.srcPort[i], f.startNs[i], f.end(i), f.bytes[i]);
    return groups.table(f.endpoints);
}

FlowTable TableStore::roceRecords(const RecordSelection& selection) {
    const FlowTable& f = m_flows;
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ranges(f.endpoints.size());
    for (const IpAddr& ip : selection.whole)
        if (EndpointId e = f.endpoints.find(ip); e < f.endpoints.size()) ranges[e].emplace_back(lo, hi);
    for (const SenderRange& r : selection.ranges)
        if (EndpointId e = f.endpoints.find(r.src); e < f.endpoints.size()) ranges[e].emplace_back(r.from, r.to);
    FlowTable out;
    if (f.hasCongestion()) out.enableCongestion();
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f.isRoce(i)) continue;
        const auto& rs = ranges[f.src[i]];
        const std::int64_t t = f.startNs[i];
        if (!std::any_of(rs.begin(), rs.end(), [t](const auto& r) { return t >= r.first && t < r.second; })) continue;
        FlowRecord r = f.record(i);
        if (f.hasCongestion()) {
            const EndpointId s = out.endpoints.intern(r.src), d = out.endpoints.intern(r.dst);
            out.append(r.startNs, r.endNs, s, d, r.srcPort, r.dstPort, r.proto, r.bytes, r.packets, f.retransmits[i],
                       f.cnps[i], f.ecnCe[i]);
        } else {
            out.append(r);
        }
    }
    if (!out.isSortedByStart()) out.sortByStart(1);
    return out;
}

TimeResolution TableStore::resolution() { return measureResolution(m_flows); }

} // namespace prism
