#pragma once
// Columnar store of flow records: one vector per field (struct of arrays), endpoints interned.
// Memory per record: 4 (start, compacted; 8 while built) + 4 (duration) + 2+2 (endpoint ids) + 2+2 (ports) + 1
// (proto) + 4 (bytes) + 4 (packets) = 25 B while every duration and count fits 32 bits and every endpoint id 16;
// a column holding a larger value takes twice its bytes a row (HalvedColumn, StartColumn).
#include "model/ip.h"
#include "util/memory.h"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
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

// A column of values held in halves: the low halves, and the high halves only once a value needs them (then
// twice the bytes a row, as a plain column). Reads need no search; a value that needs the high half widens the
// whole column, once. (`Alloc`: the halves' allocator.)
template <typename Value, typename Half, typename Alloc = std::allocator<Half>>
class HalvedColumn {
    static_assert(sizeof(Value) == 2 * sizeof(Half) && std::is_unsigned_v<Value> && std::is_unsigned_v<Half>);
    static constexpr int kBits = 8 * sizeof(Half);

public:
    Value operator[](std::size_t i) const { return m_wide ? Value(m_high[i]) << kBits | m_low[i] : m_low[i]; }
    std::size_t size() const { return m_low.size(); }
    bool empty() const { return m_low.empty(); }
    std::size_t capacity() const { return m_low.capacity(); }
    bool wide() const { return m_wide; } // the high halves are held
    std::size_t memoryBytes() const { return (m_low.capacity() + m_high.capacity()) * sizeof(Half); }
    void reserve(std::size_t n) {
        m_low.reserve(n);
        if (wide()) m_high.reserve(n);
    }
    void clear() {
        m_low.clear();
        std::vector<Half>().swap(m_high);
        m_wide = false;
    }
    void push_back(Value v) {
        if ((v >> kBits) != 0 && !wide()) widen();
        m_low.push_back(Half(v));
        if (wide()) m_high.push_back(Half(v >> kBits));
    }
    void set(std::size_t i, Value v) {
        if ((v >> kBits) != 0 && !wide()) widen();
        m_low[i] = Half(v);
        if (wide()) m_high[i] = Half(v >> kBits);
    }
    // n rows: new ones 0, rows from n on dropped.
    void resize(std::size_t n) {
        m_low.resize(n, 0);
        if (wide()) m_high.resize(n, 0);
    }
    // n rows for their users to fill whole: new ones value-initialized by the allocator (unset with one that leaves
    // them so, as UnsetAllocator: not written on one core before the fill).
    void resizeToFill(std::size_t n) {
        m_low.resize(n);
        if (wide()) m_high.resize(n);
    }
    // Every row of `other` after these.
    void append(const HalvedColumn& other) {
        if (other.wide() && !wide()) widen();
        const std::size_t before = m_low.size();
        m_low.insert(m_low.end(), other.m_low.begin(), other.m_low.end());
        if (!wide()) return;
        if (other.wide()) m_high.insert(m_high.end(), other.m_high.begin(), other.m_high.end());
        else m_high.resize(before + other.size(), 0);
    }
    // Holds the high halves (zeros) from now on, as if a value that needs them had come.
    void widen() {
        if (m_wide) return;
        m_high.reserve(m_low.capacity());
        m_high.assign(m_low.size(), Half(0));
        m_wide = true;
    }
    // Filling many rows at once, from several threads (a session's chunks): each writes the low halves of its
    // rows, and keeps the high halves of a part that needs them, written once every part is done (or the column
    // widened first and the high halves written too).
    Half* low() { return m_low.data(); }
    Half* high() { return m_high.data(); } // meaningful once wide()

    bool operator==(const HalvedColumn& o) const { // the same values (however held)
        if (size() != o.size()) return false;
        for (std::size_t i = 0; i < size(); ++i)
            if ((*this)[i] != o[i]) return false;
        return true;
    }

private:
    std::vector<Half, Alloc> m_low, m_high;
    bool m_wide = false;
};

// A column of 64-bit counts (bytes, packets, durations) held in 32 bits a row while every count fits. Simulated
// captures and packet captures rarely need the high halves; flow exports of long records at line rate do (400
// Gb/s for 1 s is 50 GB), and then every row pays the same 8 bytes.
using CountColumn = HalvedColumn<std::uint64_t, std::uint32_t>;
// A column of endpoint ids held in 16 bits a row while every id is below 2^16 (a cluster's NICs number
// thousands, tens of thousands at most), 4 bytes a row once one is not.
using IdColumn = HalvedColumn<EndpointId, std::uint16_t>;

// The records' start times: 8 bytes a row while the table is being built, read or reordered; once compacted
// (compact(), after the sort), a base per block of 2^16 rows and each row's 32-bit offset from it (frame of
// reference), 4 bytes a row: the rows of a block, sorted, lie within 4.3 s of each other wherever 65,536
// records take less than that (a capture dense enough for its size to matter). A block that does not (a pause,
// the quiet between two jobs) keeps its rows at 8 bytes beside the others (12 a row); where more than half the
// rows would, the column stays as it was. A write that does not fit its block expands the column first.
class StartColumn {
public:
    static constexpr int kShift = 16;

    [[gnu::always_inline]] std::int64_t operator[](std::size_t i) const {
        if (!m_compact) return m_full[i];
        const std::int64_t base = m_base[i >> kShift];
        return base != kWideBlock ? base + std::int64_t(m_off[i]) : m_full[m_off[i]];
    }
    std::size_t size() const { return m_compact ? m_off.size() : m_full.size(); }
    bool empty() const { return size() == 0; }
    std::int64_t front() const { return (*this)[0]; }
    std::int64_t back() const { return (*this)[size() - 1]; }
    bool compacted() const { return m_compact; }
    std::size_t memoryBytes() const { return m_full.capacity() * 8 + m_off.capacity() * 4 + m_base.capacity() * 8; }
    std::size_t capacity() const { return m_compact ? m_off.capacity() : m_full.capacity(); }
    void reserve(std::size_t n) {
        if (m_compact && n <= size()) return;
        expand();
        m_full.reserve(n);
    }
    void clear() { // (keeps the 8-byte rows' capacity)
        m_full.clear();
        if (!m_compact) return;
        decltype(m_off)().swap(m_off);
        std::vector<std::int64_t>().swap(m_base);
        m_compact = false;
    }
    void push_back(std::int64_t v) {
        expand();
        m_full.push_back(v);
    }
    void set(std::size_t i, std::int64_t v) {
        if (m_compact) {
            const std::int64_t base = m_base[i >> kShift];
            if (base == kWideBlock) {
                m_full[m_off[i]] = v;
                return;
            }
            const std::uint64_t d = std::uint64_t(v) - std::uint64_t(base);
            if (d >> 32 == 0 && v >= base) {
                m_off[i] = std::uint32_t(d);
                return;
            }
            expand();
        }
        m_full[i] = v;
    }
    void resize(std::size_t n); // new rows 0; a compacted column that shrinks stays compacted
    void append(const StartColumn& other);
    // The rows as 8-byte values, to fill or reorder in place (expands a compacted column).
    std::int64_t* data() {
        expand();
        return m_full.data();
    }
    // Compacts where at least half the rows are in blocks whose rows lie within 2^32 ns of its least (on `threads`
    // threads); returns whether it did. The 8-byte rows of the other blocks are kept, the rest freed.
    bool compact(unsigned threads = 0);
    void expand(); // back to 8 bytes a row
    bool operator==(const StartColumn& o) const;

    // The values in row order (for algorithms and range-for; each one read as operator[] reads it: a proxy, as
    // vector<bool>'s, random access for the standard algorithms).
    class const_iterator {
    public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = std::int64_t;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = std::int64_t;
        const_iterator() = default;
        const_iterator(const StartColumn* c, std::size_t i) : m_c(c), m_i(i) {}
        std::int64_t operator*() const { return (*m_c)[m_i]; }
        std::int64_t operator[](difference_type k) const { return (*m_c)[std::size_t(difference_type(m_i) + k)]; }
        const_iterator& operator++() { return ++m_i, *this; }
        const_iterator operator++(int) { return {m_c, m_i++}; }
        const_iterator& operator--() { return --m_i, *this; }
        const_iterator operator--(int) { return {m_c, m_i--}; }
        const_iterator& operator+=(difference_type k) { return m_i = std::size_t(difference_type(m_i) + k), *this; }
        const_iterator& operator-=(difference_type k) { return *this += -k; }
        friend const_iterator operator+(const_iterator a, difference_type k) { return a += k; }
        friend const_iterator operator+(difference_type k, const_iterator a) { return a += k; }
        friend const_iterator operator-(const_iterator a, difference_type k) { return a -= k; }
        friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
            return difference_type(a.m_i) - difference_type(b.m_i);
        }
        friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.m_i == b.m_i; }
        friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.m_i <=> b.m_i; }

    private:
        const StartColumn* m_c = nullptr;
        std::size_t m_i = 0;
    };
    const_iterator begin() const { return {this, 0}; }
    const_iterator end() const { return {this, size()}; }

private:
    static constexpr std::int64_t kWideBlock = std::numeric_limits<std::int64_t>::min(); // a base: 8-byte rows
    bool m_compact = false;
    std::vector<std::int64_t> m_full; // every row; once compacted, the rows of the wide blocks only
    // Compacted: each row's offset from its block's base, or its place in m_full. (Taken unset: compact() writes every
    // row, side by side; zeroed first, its 4 bytes a row were written on one core: 12.7 MB on the first half of
    // `large`.)
    std::vector<std::uint32_t, UnsetAllocator<std::uint32_t>> m_off;
    std::vector<std::int64_t> m_base; // per block, its least start (never kWideBlock), or kWideBlock
};

class FlowTable {
public:
    StartColumn startNs;
    // Each record's duration: its end less its start, modulo 2^64 (an end before its start comes back as it went
    // in). Held in 4 bytes a row while every duration is under 2^32 ns (4.3 s), as the counts are (CountColumn):
    // records of transfers last milliseconds; an exporter's long flows widen the column. Read by end(i).
    CountColumn durationNs;
    IdColumn src;
    IdColumn dst;
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
    std::int64_t lastEnd() const; // the latest end of any record (0 without records)
    std::int64_t end(std::size_t i) const { return std::int64_t(std::uint64_t(startNs[i]) + durationNs[i]); }
    // Sets record i's end; its start first: a record's end moves with its start (the duration is held).
    void setEnd(std::size_t i, std::int64_t e) { durationNs.set(i, std::uint64_t(e) - std::uint64_t(startNs[i])); }
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

private:
    bool m_congestion = false;
};

} // namespace prism
