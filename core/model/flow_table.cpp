#include "model/flow_table.h"

#include <algorithm>
#include <numeric>

namespace prism {

EndpointId EndpointTable::intern(const IpAddr& ip) {
    auto [it, inserted] = m_index.try_emplace(ip, EndpointId(m_addrs.size()));
    if (inserted) m_addrs.push_back(ip);
    return it->second;
}

EndpointId EndpointTable::find(const IpAddr& ip) const {
    auto it = m_index.find(ip);
    return it == m_index.end() ? EndpointId(m_addrs.size()) : it->second;
}

void EndpointTable::reserve(std::size_t n) {
    m_addrs.reserve(n);
    m_index.reserve(n);
}

std::size_t EndpointTable::memoryBytes() const {
    return m_addrs.capacity() * sizeof(IpAddr) +
           m_index.size() * (sizeof(IpAddr) + sizeof(EndpointId) + 2 * sizeof(void*)) +
           m_index.bucket_count() * sizeof(void*);
}

void FlowTable::reserve(std::size_t n) {
    startNs.reserve(n);
    endNs.reserve(n);
    src.reserve(n);
    dst.reserve(n);
    srcPort.reserve(n);
    dstPort.reserve(n);
    proto.reserve(n);
    bytes.reserve(n);
    packets.reserve(n);
    if (m_congestion) {
        retransmits.reserve(n);
        cnps.reserve(n);
        ecnCe.reserve(n);
    }
}

void FlowTable::enableCongestion() {
    if (m_congestion) return;
    m_congestion = true;
    retransmits.assign(size(), 0);
    cnps.assign(size(), 0);
    ecnCe.assign(size(), 0);
}

void FlowTable::clear() { *this = FlowTable{}; }

void FlowTable::append(const FlowRecord& r) {
    append(r.startNs, r.endNs, endpoints.intern(r.src), endpoints.intern(r.dst), r.srcPort, r.dstPort, r.proto,
           r.bytes, r.packets);
}

void FlowTable::append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                       std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk) {
    startNs.push_back(start);
    endNs.push_back(end);
    src.push_back(s);
    dst.push_back(d);
    srcPort.push_back(sport);
    dstPort.push_back(dport);
    proto.push_back(pr);
    bytes.push_back(by);
    packets.push_back(pk);
    if (m_congestion) {
        retransmits.push_back(0);
        cnps.push_back(0);
        ecnCe.push_back(0);
    }
}

void FlowTable::append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                       std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk,
                       std::uint32_t retrans, std::uint32_t cnp, std::uint32_t ce) {
    enableCongestion();
    append(start, end, s, d, sport, dport, pr, by, pk);
    retransmits.back() = retrans;
    cnps.back() = cnp;
    ecnCe.back() = ce;
}

FlowRecord FlowTable::record(std::size_t i) const {
    return FlowRecord{startNs[i], endNs[i], endpoints.at(src[i]), endpoints.at(dst[i]), srcPort[i],
                      dstPort[i],  proto[i], bytes[i],              packets[i]};
}

bool FlowTable::isSortedByStart() const {
    for (std::size_t i = 1; i < size(); ++i)
        if (startNs[i] < startNs[i - 1] || (startNs[i] == startNs[i - 1] && endNs[i] < endNs[i - 1])) return false;
    return true;
}

template <typename T> static void permute(std::vector<T>& v, const std::vector<std::uint32_t>& order) {
    std::vector<T> out(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) out[i] = v[order[i]];
    v.swap(out);
}

void FlowTable::sortByStart() {
    if (isSortedByStart()) return;
    std::vector<std::uint32_t> order(size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [this](std::uint32_t a, std::uint32_t b) {
        return startNs[a] != startNs[b] ? startNs[a] < startNs[b] : endNs[a] < endNs[b];
    });
    permute(startNs, order);
    permute(endNs, order);
    permute(src, order);
    permute(dst, order);
    permute(srcPort, order);
    permute(dstPort, order);
    permute(proto, order);
    permute(bytes, order);
    permute(packets, order);
    if (m_congestion) {
        permute(retransmits, order);
        permute(cnps, order);
        permute(ecnCe, order);
    }
}

std::size_t FlowTable::memoryBytes() const {
    return startNs.capacity() * 8 + endNs.capacity() * 8 + src.capacity() * 4 + dst.capacity() * 4 +
           srcPort.capacity() * 2 + dstPort.capacity() * 2 + proto.capacity() + bytes.capacity() * 8 +
           packets.capacity() * 8 + (retransmits.capacity() + cnps.capacity() + ecnCe.capacity()) * 4 +
           endpoints.memoryBytes();
}

} // namespace prism
