#pragma once
// Columnar store of flow records: one vector per field (struct of arrays), endpoints interned.
// Memory per record: 8+8 (times) + 4+4 (endpoint ids) + 2+2 (ports) + 1 (proto) + 4 (bytes) + 4 (packets) = 37 B
// while every count fits 32 bits; a column holding a count of 2^32 or more takes 8 bytes a row (CountColumn).
#include "model/ip.h"

#include <cstdint>
#include <unordered_map>
#include <utility>
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

// A column of 64-bit counts (bytes, packets) held in 32 bits a row while every count fits: the low halves, and
// the high halves only once a count of 2^32 or more comes (then 8 bytes a row, as a plain column). Simulated
// captures and packet captures rarely need the high halves; flow exports of long records at line rate do
// (400 Gb/s for 1 s is 50 GB), and then every row pays the same 8 bytes, with no search on a read.
class CountColumn {
public:
    using High = std::pair<std::uint64_t, std::uint32_t>; // (row, high half)

    std::uint64_t operator[](std::size_t i) const {
        return m_wide ? (std::uint64_t(m_high[i]) << 32) | m_low[i] : m_low[i];
    }
    std::size_t size() const { return m_low.size(); }
    bool empty() const { return m_low.empty(); }
    std::size_t capacity() const { return m_low.capacity(); }
    bool wide() const { return m_wide; } // the high halves are held
    std::size_t memoryBytes() const { return (m_low.capacity() + m_high.capacity()) * 4; }
    void reserve(std::size_t n) {
        m_low.reserve(n);
        if (wide()) m_high.reserve(n);
    }
    void clear() {
        m_low.clear();
        std::vector<std::uint32_t>().swap(m_high);
        m_wide = false;
    }
    void push_back(std::uint64_t v) {
        if ((v >> 32) != 0 && !wide()) widen();
        m_low.push_back(std::uint32_t(v));
        if (wide()) m_high.push_back(std::uint32_t(v >> 32));
    }
    void set(std::size_t i, std::uint64_t v) {
        if ((v >> 32) != 0 && !wide()) widen();
        m_low[i] = std::uint32_t(v);
        if (wide()) m_high[i] = std::uint32_t(v >> 32);
    }
    // n rows: new ones 0, rows from n on dropped.
    void resize(std::size_t n);
    // Every row of `other` after these.
    void append(const CountColumn& other);
    // Filling many rows at once, from several threads (a session's chunks): each writes the low halves of its
    // rows, and gathers (row, high half) of the counts of 2^32 or more; the gathered halves are set after.
    std::uint32_t* low() { return m_low.data(); }
    std::uint32_t* high() { return m_high.data(); } // meaningful once wide()
    void setHigh(const std::vector<High>& halves);

    bool operator==(const CountColumn& o) const; // the same counts (however held)

private:
    void widen() {
        m_high.reserve(m_low.capacity());
        m_high.assign(m_low.size(), 0);
        m_wide = true;
    }
    std::vector<std::uint32_t> m_low, m_high;
    bool m_wide = false;
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
    CountColumn bytes;
    CountColumn packets;
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
    // Drops the records and frees their memory; keeps the endpoint table (ids stay valid).
    void releaseRecords();
    // A 64-bit digest of the records (times, endpoints, ports, protocols, counts) and of the endpoints' addresses:
    // tells whether a table read again is the one read before, where that one is no longer held.
    std::uint64_t fingerprint() const;
    void append(const FlowRecord& r);
    // Appends with already interned endpoints (the fast path of the readers).
    void append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk);
    // Appends one record with its congestion counts (enables the congestion columns first if needed).
    void append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk, std::uint32_t retrans,
                std::uint32_t cnp, std::uint32_t ce);
    FlowRecord record(std::size_t i) const;
    // Every record of `parts`, in their order, as one table: the first part grown in place (its endpoint ids
    // kept, the others' interned after them), congestion counts kept, zeros where a part has none. Each other
    // part's column is freed once copied: the peak is the records plus one column.
    static FlowTable concatenate(std::vector<FlowTable> parts);

    bool hasCongestion() const { return m_congestion; }
    // Gives the congestion columns one zero entry per record already held; later appends keep them aligned.
    void enableCongestion();

    // RoCEv2: UDP to port 4791.
    bool isRoce(std::size_t i) const { return proto[i] == kProtoUdp && dstPort[i] == kRoceV2Port; }

    bool isSortedByStart() const;
    // Stable sort of every column by start time (then end time), on `threads` threads (0: one per core): blocks
    // sorted side by side and merged, then each column permuted: in place through a small ring when no row
    // moves more than 64K rows up (records that come nearly by start), else through one scratch block, its
    // rows split between the threads (beside the table: 4 bytes a record for the order, and 8 for the
    // scratch in the second case).
    void sortByStart(unsigned threads = 0);
    // Bytes held by the columns and the endpoint table (capacity, not size).
    std::size_t memoryBytes() const;
    static constexpr std::size_t kBytesPerRecord = 8 + 8 + 4 + 4 + 2 + 2 + 1 + 4 + 4;

private:
    bool m_congestion = false;
};

} // namespace prism
