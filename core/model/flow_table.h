#pragma once
// Columnar store of flow records: one vector per field (struct of arrays), endpoints interned.
// Memory per record: 8+8 (times) + 4+4 (endpoint ids) + 2+2 (ports) + 1 (proto) + 8 (bytes) + 8 (packets) = 45 B.
#include "model/ip.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace prism {

using EndpointId = std::uint32_t;

// Interns IP addresses: each distinct address gets a dense id 0..size()-1.
class EndpointTable {
public:
    EndpointId intern(const IpAddr& ip);
    // Returns size() when the address is unknown.
    EndpointId find(const IpAddr& ip) const;
    const IpAddr& at(EndpointId id) const { return m_addrs[id]; }
    std::size_t size() const { return m_addrs.size(); }
    void reserve(std::size_t n);
    std::size_t memoryBytes() const;

private:
    std::vector<IpAddr> m_addrs;
    std::unordered_map<IpAddr, EndpointId, IpAddrHash> m_index;
};

inline constexpr std::uint16_t kRoceV2Port = 4791;
inline constexpr std::uint8_t kProtoUdp = 17;
inline constexpr std::uint8_t kProtoTcp = 6;

struct FlowRecord {
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
    IpAddr src;
    IpAddr dst;
    std::uint16_t srcPort = 0;
    std::uint16_t dstPort = 0;
    std::uint8_t proto = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
};

class FlowTable {
public:
    std::vector<std::int64_t> startNs;
    std::vector<std::int64_t> endNs;
    std::vector<EndpointId> src;
    std::vector<EndpointId> dst;
    std::vector<std::uint16_t> srcPort;
    std::vector<std::uint16_t> dstPort;
    std::vector<std::uint8_t> proto;
    std::vector<std::uint64_t> bytes;
    std::vector<std::uint64_t> packets;
    // Optional congestion evidence (packet captures): retransmissions (PSN going back), CNPs received for the
    // flow, ECN-CE marked packets. Empty unless a source called enableCongestion(); then one entry per record
    // (append() adds zeros for records given without counts).
    std::vector<std::uint32_t> retransmits;
    std::vector<std::uint32_t> cnps;
    std::vector<std::uint32_t> ecnCe;
    EndpointTable endpoints;

    std::size_t size() const { return startNs.size(); }
    bool empty() const { return startNs.empty(); }
    void reserve(std::size_t n);
    void clear();
    // Keeps the records that start in [from, to), in their order; endpoints interned anew (only those kept).
    void keepStartsIn(std::int64_t from, std::int64_t to);
    // Drops the records, keeps the endpoint table (ids stay valid) and the columns' capacity.
    void clearRecords();
    void append(const FlowRecord& r);
    // Appends with already interned endpoints (the fast path of the readers).
    void append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk);
    // Appends one record with its congestion counts (enables the congestion columns first if needed).
    void append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk, std::uint32_t retrans,
                std::uint32_t cnp, std::uint32_t ce);
    FlowRecord record(std::size_t i) const;
    // Every record of `parts`, in their order, as one table (endpoints interned anew, congestion counts kept,
    // zeros where a part has none). Each part's column is freed once copied: the peak is the records plus one
    // column.
    static FlowTable concatenate(std::vector<FlowTable> parts);

    bool hasCongestion() const { return m_congestion; }
    // Gives the congestion columns one zero entry per record already held; later appends keep them aligned.
    void enableCongestion();

    // RoCEv2: UDP to port 4791.
    bool isRoce(std::size_t i) const { return proto[i] == kProtoUdp && dstPort[i] == kRoceV2Port; }

    bool isSortedByStart() const;
    // Stable sort of every column by start time (then end time), on `threads` threads (0: one per core): parts
    // sorted side by side and merged, then each column permuted in place through one scratch block, its rows
    // split between the threads (beside the table: 4 bytes a record for the order, 8 for the scratch).
    void sortByStart(unsigned threads = 0);
    // Bytes held by the columns and the endpoint table (capacity, not size).
    std::size_t memoryBytes() const;
    static constexpr std::size_t kBytesPerRecord = 8 + 8 + 4 + 4 + 2 + 2 + 1 + 8 + 8;

private:
    bool m_congestion = false;
};

} // namespace prism
