// TableStore: the FlowStore answers computed from a FlowTable in memory; measureResolution.
#include "model/flow_store.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace prism {

TimeResolution measureResolution(const FlowTable& flows) {
    TimeResolution r;
    bool anyRoce = false;
    for (std::size_t i = 0; i < flows.size() && !anyRoce; ++i) anyRoce = flows.isRoce(i);
    std::vector<std::int64_t> spans;
    std::int64_t granularity = 1'000'000'000;
    for (std::size_t i = 0; i < flows.size(); ++i) {
        if (anyRoce && !flows.isRoce(i)) continue;
        spans.push_back(flows.endNs[i] - flows.startNs[i]);
        // The coarsest unit every start is a multiple of.
        while (granularity > 1 && flows.startNs[i] % granularity != 0) granularity /= 1000;
    }
    r.records = spans.size();
    if (spans.empty()) return r;
    r.stampGranularityNs = granularity;
    const auto mid = spans.begin() + std::ptrdiff_t(spans.size() / 2);
    std::nth_element(spans.begin(), mid, spans.end());
    r.typicalSpanNs = *mid;
    if (r.typicalSpanNs > 0) {
        std::size_t near = 0;
        for (std::int64_t s : spans)
            near += s >= r.typicalSpanNs - r.typicalSpanNs / 10 && s <= r.typicalSpanNs + r.typicalSpanNs / 10;
        r.fixedSpan = near * 2 > spans.size();
    }
    return r;
}

StoreOverview TableStore::overview() {
    StoreOverview o;
    const FlowTable& f = m_flows;
    o.records = f.size();
    std::vector<bool> seen(f.endpoints.size(), false);
    bool anyRoce = false;
    for (std::size_t i = 0; i < f.size(); ++i) {
        seen[f.src[i]] = seen[f.dst[i]] = true;
        if (!f.isRoce(i)) {
            ++o.otherRecords;
            o.otherBytes += f.bytes[i];
            continue;
        }
        ++o.roceRecords;
        o.roceBytes += f.bytes[i];
        o.roceFirstNs = anyRoce ? std::min(o.roceFirstNs, f.startNs[i]) : f.startNs[i];
        o.roceLastNs = anyRoce ? std::max(o.roceLastNs, f.endNs[i]) : f.endNs[i];
        anyRoce = true;
    }
    o.endpoints = std::uint64_t(std::count(seen.begin(), seen.end(), true));
    if (!f.empty()) {
        o.firstNs = *std::min_element(f.startNs.begin(), f.startNs.end());
        o.lastNs = *std::max_element(f.endNs.begin(), f.endNs.end());
    }
    return o;
}

FlowTable TableStore::groupedRoce(std::int64_t lo, std::int64_t width) {
    struct Key {
        EndpointId src, dst;
        std::uint16_t port;
        std::int64_t bin;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            std::uint64_t h = (std::uint64_t(k.src) << 32 | k.dst) * 0x9E3779B97F4A7C15ull;
            return std::size_t(h ^ (h >> 29) ^ (std::uint64_t(k.bin) * 0xC2B2AE3D27D4EB4Full) ^ k.port);
        }
    };
    struct Group {
        Key key;
        std::int64_t first, last;
        std::uint64_t bytes = 0, records = 0;
    };
    const FlowTable& f = m_flows;
    std::unordered_map<Key, std::size_t, KeyHash> index;
    std::vector<Group> groups;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f.isRoce(i)) continue;
        const Key key{f.src[i], f.dst[i], f.srcPort[i], (f.startNs[i] - lo) / width};
        auto [it, inserted] = index.try_emplace(key, groups.size());
        if (inserted) groups.push_back({key, f.startNs[i], f.endNs[i]});
        Group& g = groups[it->second];
        g.first = std::min(g.first, f.startNs[i]);
        g.last = std::max(g.last, f.endNs[i]);
        g.bytes += f.bytes[i];
        ++g.records;
    }
    std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
        return a.first != b.first ? a.first < b.first : a.last < b.last;
    });
    FlowTable out;
    out.reserve(groups.size());
    for (const Group& g : groups) {
        FlowRecord r;
        r.startNs = g.first;
        r.endNs = g.last;
        r.src = f.endpoints.at(g.key.src);
        r.dst = f.endpoints.at(g.key.dst);
        r.srcPort = g.key.port;
        r.dstPort = kRoceV2Port;
        r.proto = kProtoUdp;
        r.bytes = g.bytes;
        r.packets = g.records;
        out.append(r);
    }
    return out;
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
