#include "model/flow_table.h"

#include "util/memory.h"
#include "util/parallel.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>
#include <utility>

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

void StartColumn::append(const StartColumn& other) {
    expand();
    if (!other.m_compact) {
        m_full.insert(m_full.end(), other.m_full.begin(), other.m_full.end());
        return;
    }
    m_full.reserve(m_full.size() + other.size());
    for (std::size_t i = 0; i < other.size(); ++i) m_full.push_back(other[i]);
}

bool StartColumn::compact(unsigned threads) {
    if (m_compact || m_full.empty()) return m_compact;
    const std::size_t n = m_full.size(), blocks = ((n - 1) >> kShift) + 1;
    const unsigned t = threadCount(threads);
    auto rows = [&](std::size_t b) { return std::pair{b << kShift, std::min(n, (b + 1) << kShift)}; };
    std::vector<std::int64_t> base(blocks);
    parallelFor(blocks, t, [&](std::size_t b, unsigned) {
        const auto [lo, hi] = rows(b);
        const auto [least, most] =
            std::minmax_element(m_full.begin() + std::ptrdiff_t(lo), m_full.begin() + std::ptrdiff_t(hi));
        const bool fits = (std::uint64_t(*most) - std::uint64_t(*least)) >> 32 == 0 && *least != kWideBlock;
        base[b] = fits ? *least : kWideBlock;
    });
    std::size_t wideRows = 0;
    for (std::size_t b = 0; b < blocks; ++b)
        if (base[b] == kWideBlock) wideRows += rows(b).second - rows(b).first;
    if (wideRows * 2 > n) return false; // 12 bytes a row or more: no saving
    decltype(m_off) off(n);             // (beside the 8-byte rows until those go; every row written below)
    std::vector<std::int64_t> wide;
    wide.reserve(wideRows);
    for (std::size_t b = 0; b < blocks; ++b) { // the wide blocks' rows, in order, where their offsets point
        if (base[b] != kWideBlock) continue;
        const auto [lo, hi] = rows(b);
        for (std::size_t i = lo; i < hi; ++i) {
            off[i] = std::uint32_t(wide.size());
            wide.push_back(m_full[i]);
        }
    }
    parallelFor(blocks, t, [&](std::size_t b, unsigned) {
        if (base[b] == kWideBlock) return;
        const auto [lo, hi] = rows(b);
        for (std::size_t i = lo; i < hi; ++i) off[i] = std::uint32_t(std::uint64_t(m_full[i]) - std::uint64_t(base[b]));
    });
    m_off = std::move(off);
    m_base = std::move(base);
    m_full = std::move(wide);
    m_compact = true;
    return true;
}

void StartColumn::resize(std::size_t n) {
    if (m_compact && n <= size()) {
        m_off.resize(n);
        m_base.resize(n ? ((n - 1) >> kShift) + 1 : 0); // (wide blocks' rows past n stay unread)
        return;
    }
    expand();
    m_full.resize(n, 0);
}

void StartColumn::expand() {
    if (!m_compact) return;
    std::vector<std::int64_t> full(m_off.size());
    for (std::size_t i = 0; i < full.size(); ++i) full[i] = (*this)[i];
    m_full = std::move(full); // (the wide blocks' rows were read above)
    decltype(m_off)().swap(m_off);
    std::vector<std::int64_t>().swap(m_base);
    m_compact = false;
}

bool StartColumn::operator==(const StartColumn& o) const {
    if (size() != o.size()) return false;
    for (std::size_t i = 0; i < size(); ++i)
        if ((*this)[i] != o[i]) return false;
    return true;
}

void FlowTable::reserve(std::size_t n) {
    startNs.reserve(n);
    durationNs.reserve(n);
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

void FlowTable::keepStartsIn(std::int64_t from, std::int64_t to) {
    const bool compacted = startNs.compacted(); // (rows moved to other blocks may not fit them: compacted anew)
    EndpointTable kept;
    std::vector<EndpointId> id(endpoints.size(), ~EndpointId(0));
    auto map = [&](EndpointId e) {
        if (id[e] == ~EndpointId(0)) id[e] = kept.intern(endpoints.at(e));
        return id[e];
    };
    std::size_t n = 0;
    for (std::size_t i = 0; i < size(); ++i) {
        if (startNs[i] < from || startNs[i] >= to) continue;
        startNs.set(n, startNs[i]);
        durationNs.set(n, durationNs[i]);
        src.set(n, map(src[i]));
        dst.set(n, map(dst[i]));
        srcPort[n] = srcPort[i];
        dstPort[n] = dstPort[i];
        proto[n] = proto[i];
        bytes.set(n, bytes[i]);
        packets.set(n, packets[i]);
        if (m_congestion) {
            retransmits[n] = retransmits[i];
            cnps[n] = cnps[i];
            ecnCe[n] = ecnCe[i];
        }
        ++n;
    }
    startNs.resize(n);
    for (auto* c : {&src, &dst}) c->resize(n);
    for (auto* c : {&srcPort, &dstPort}) c->resize(n);
    proto.resize(n);
    for (auto* c : {&durationNs, &bytes, &packets}) c->resize(n);
    if (m_congestion)
        for (auto* c : {&retransmits, &cnps, &ecnCe}) c->resize(n);
    endpoints = std::move(kept);
    if (compacted) startNs.compact();
}

void FlowTable::clearRecords() {
    startNs.clear();
    for (auto* c : {&src, &dst}) c->clear();
    for (auto* c : {&srcPort, &dstPort}) c->clear();
    proto.clear();
    for (auto* c : {&durationNs, &bytes, &packets}) c->clear();
    for (auto* c : {&retransmits, &cnps, &ecnCe}) c->clear();
}

std::int64_t FlowTable::lastEnd() const {
    if (empty()) return 0;
    std::int64_t last = end(0);
    for (std::size_t i = 1; i < size(); ++i) last = std::max(last, end(i));
    return last;
}

void FlowTable::releaseRecords() {
    FlowTable kept;
    kept.endpoints = std::move(endpoints);
    *this = std::move(kept);
}

std::uint64_t FlowTable::fingerprint() const {
    // Word by word, a multiply and a shift-xor each, in four interleaved lanes per column (one chain waited on
    // every multiply: 0.08 s on `large`, on the GUI's path from capture to window), the columns on every core;
    // each column's digest after its length, in column order.
    auto mix = [](std::uint64_t& h, std::uint64_t w) {
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    };
    auto digest = [&mix](const auto& v) {
        std::uint64_t lane[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                                 0x27D4EB2F165667C5ull};
        const std::size_t n = v.size();
        std::size_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (std::size_t k = 0; k < 4; ++k) mix(lane[k], std::uint64_t(v[i + k]));
        for (; i < n; ++i) mix(lane[0], std::uint64_t(v[i]));
        std::uint64_t h = n;
        for (std::uint64_t l : lane) mix(h, l);
        return h;
    };
    std::uint64_t digests[12] = {};
    const std::function<void()> columns[12] = {
        [&] { digests[0] = digest(startNs); }, [&] { digests[1] = digest(durationNs); },
        [&] { digests[2] = digest(src); },     [&] { digests[3] = digest(dst); },
        [&] { digests[4] = digest(srcPort); }, [&] { digests[5] = digest(dstPort); },
        [&] { digests[6] = digest(proto); },   [&] { digests[7] = digest(bytes); },
        [&] { digests[8] = digest(packets); }, [&] { digests[9] = digest(retransmits); },
        [&] { digests[10] = digest(cnps); },   [&] { digests[11] = digest(ecnCe); },
    };
    parallelFor(std::size(columns), threadCount(0), [&](std::size_t k, unsigned) { columns[k](); });
    std::uint64_t h = 0x9E3779B97F4A7C15ull;
    for (std::uint64_t d : digests) mix(h, d);
    mix(h, endpoints.size());
    for (EndpointId e = 0; e < endpoints.size(); ++e) mix(h, IpAddrHash{}(endpoints.at(e)));
    return h;
}

FlowTable FlowTable::concatenate(std::vector<FlowTable> parts) {
    if (parts.empty()) return {};
    // The first part is the table: its columns grow in place and its endpoint ids stay (a reader that reserved
    // room for the rows of every part copies only the others': on `large` half of the table copied, and half as
    // many fresh pages, instead of all of it).
    FlowTable out = std::move(parts[0]);
    const std::size_t first = out.size();
    const bool firstCongestion = out.m_congestion;
    std::size_t total = first;
    std::vector<std::size_t> sizes(parts.size(), 0); // (the columns go one by one)
    std::vector<std::vector<EndpointId>> id(parts.size());
    for (std::size_t p = 1; p < parts.size(); ++p) {
        sizes[p] = parts[p].size();
        total += parts[p].size();
        if (parts[p].hasCongestion()) out.m_congestion = true;
        for (EndpointId e = 0; e < parts[p].endpoints.size(); ++e)
            id[p].push_back(out.endpoints.intern(parts[p].endpoints.at(e)));
    }
    if (out.m_congestion && !firstCongestion)
        for (auto* v : {&out.retransmits, &out.cnps, &out.ecnCe}) v->assign(first, 0);
    // Column by column, the columns side by side (a thread a column; on `large` the copy took 0.06 s on one core):
    // each of the table's columns grows to its size while the parts' copies of it are freed one by one.
    auto column = [&](auto member, bool congestion = false) {
        auto& to = out.*member;
        to.reserve(total);
        for (std::size_t p = 1; p < parts.size(); ++p) {
            auto& from = parts[p].*member;
            if (congestion && !parts[p].m_congestion) to.resize(to.size() + sizes[p], 0);
            else to.insert(to.end(), from.begin(), from.end());
            std::remove_reference_t<decltype(from)>().swap(from);
        }
    };
    auto endpoint = [&](IdColumn FlowTable::*member) {
        auto& to = out.*member;
        to.reserve(total);
        for (std::size_t p = 1; p < parts.size(); ++p) {
            const IdColumn& from = parts[p].*member;
            for (std::size_t i = 0; i < from.size(); ++i) to.push_back(id[p][from[i]]);
            parts[p].*member = IdColumn();
        }
    };
    auto counts = [&](CountColumn FlowTable::*member) {
        auto& to = out.*member;
        to.reserve(total);
        for (std::size_t p = 1; p < parts.size(); ++p) {
            to.append(parts[p].*member);
            parts[p].*member = CountColumn();
        }
    };
    std::vector<std::function<void()>> columns = {
        [&] {
            out.startNs.reserve(total);
            for (std::size_t p = 1; p < parts.size(); ++p) {
                out.startNs.append(parts[p].startNs);
                parts[p].startNs = StartColumn();
            }
        },
        [&] { endpoint(&FlowTable::src); },
        [&] { endpoint(&FlowTable::dst); },
        [&] { column(&FlowTable::srcPort); },
        [&] { column(&FlowTable::dstPort); },
        [&] { column(&FlowTable::proto); },
        [&] { counts(&FlowTable::durationNs); },
        [&] { counts(&FlowTable::bytes); },
        [&] { counts(&FlowTable::packets); },
    };
    if (out.m_congestion) {
        columns.push_back([&] { column(&FlowTable::retransmits, true); });
        columns.push_back([&] { column(&FlowTable::cnps, true); });
        columns.push_back([&] { column(&FlowTable::ecnCe, true); });
    }
    parallelFor(columns.size(), threadCount(0), [&](std::size_t k, unsigned) { columns[k](); });
    return out;
}

void FlowTable::append(const FlowRecord& r) {
    const EndpointId s = endpoints.intern(r.src); // the source first: ids in the order addresses are met
    const EndpointId d = endpoints.intern(r.dst);
    append(r.startNs, r.endNs, s, d, r.srcPort, r.dstPort, r.proto, r.bytes, r.packets);
}

void FlowTable::append(std::int64_t start, std::int64_t end, EndpointId s, EndpointId d, std::uint16_t sport,
                       std::uint16_t dport, std::uint8_t pr, std::uint64_t by, std::uint64_t pk) {
    startNs.push_back(start);
    durationNs.push_back(std::uint64_t(end) - std::uint64_t(start));
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
    return FlowRecord{
        startNs[i], end(i),    endpoints.at(src[i]), endpoints.at(dst[i]), srcPort[i], dstPort[i], proto[i],
        bytes[i],   packets[i]};
}

bool FlowTable::isSortedByStart() const {
    for (std::size_t i = 1; i < size(); ++i)
        if (startNs[i] < startNs[i - 1] || (startNs[i] == startNs[i - 1] && end(i) < end(i - 1))) return false;
    return true;
}

// v[i] = v[order[i]]: gathered into `scratch` (room for 8 bytes a row) by the threads side by side, rows split
// between them, then copied back. One column at a time through one scratch block: the sort holds the order and
// one 8-byte column beside the table, not a new copy of every column in flight.
// A sort's order of rows: row i of the sorted table is row order[i] (unset until the blocks fill it).
using RowOrder = std::vector<std::uint32_t, UnsetAllocator<std::uint32_t>>;

template <typename T>
static void permute(T* v, const RowOrder& order, std::byte* scratch, unsigned threads) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    T* out = reinterpret_cast<T*>(scratch);
    const std::size_t n = order.size(), parts = partsFor(n, threads, 65536);
    parallelFor(parts, threads, [&](std::size_t k, unsigned) {
        for (std::size_t i = n * k / parts, hi = n * (k + 1) / parts; i < hi; ++i) out[i] = v[order[i]];
    });
    parallelFor(parts, threads, [&](std::size_t k, unsigned) {
        std::copy(out + n * k / parts, out + n * (k + 1) / parts, v + n * k / parts);
    });
}

// v[c][i] = v[c][order[i]] in place for the first C columns of v, where no row comes from more than `mask` rows
// back (order[i] + mask >= i): the rows are overwritten in order, each one's old value kept in its column's
// `ring` (mask + 1 values) until no later row can want it. Rows from ahead are read where they are (not
// overwritten yet). For a table that came nearly sorted, a ring is a few kilobytes where a gather needs a copy
// of the column.
template <typename T, std::size_t C>
static void permuteNear(const std::array<T*, 4>& v, const RowOrder& order, std::size_t mask,
                        const std::array<T*, 4>& ring) {
    for (std::size_t i = 0; i < order.size(); ++i) {
        const std::size_t j = order[i];
        for (std::size_t c = 0; c < C; ++c) {
            const T old = v[c][i];
            const T value = j >= i ? v[c][j] : ring[c][j & mask];
            ring[c][i & mask] = old;
            v[c][i] = value;
        }
    }
}

void FlowTable::sortByStart(unsigned threads) {
    if (isSortedByStart()) return;
    const unsigned t = threadCount(threads);
    RowOrder order(size()); // (every block fills its rows', side by side)
    auto less = [this](std::uint32_t a, std::uint32_t b) {
        return startNs[a] != startNs[b] ? startNs[a] < startNs[b] : end(a) < end(b);
    };
    // Records come nearly by start (an exporter writes a flow when it ends: a record is at most about an active
    // timeout out of place). So the rows are sorted in blocks that fit a core's cache (their times are side by
    // side), the blocks side by side; then each block joins the sorted rows before it by merging only where the
    // two overlap (found by binary search), in place: at most two blocks' worth each. Where a block reaches
    // further back than a block (rows in no particular order), the rest is merged pairwise instead. Either way the
    // order is the one a stable sort of the whole gives: a merge keeps the earlier rows first on ties.
    constexpr std::size_t kBlock = 32768;
    std::vector<std::size_t> bounds;
    for (std::size_t b = 0; b < size(); b += kBlock) bounds.push_back(b);
    bounds.push_back(size());
    // A block is sorted by radix: each row a 64-bit key, its start's offset from the block's least start above its
    // place in the block, sorted 11 bits of the offset a pass from the lowest (each pass stable: rows with one
    // start keep their order); then rows with one start are put in order of their ends. The order of a stable
    // sort by (start, end), in as many passes as the block's span of starts takes (3 for 8.6 s; a comparison
    // sort of the blocks took twice the time on `large`). A block spanning 2^32 ns or more is sorted by
    // comparison instead.
    std::vector<std::vector<std::uint64_t>> keys(t), spare(t);
    const std::int64_t* const starts = startNs.data(); // (8 bytes a row: a compacted column expands, as below)
    parallelFor(bounds.size() - 1, t, [&](std::size_t k, unsigned worker) {
        const std::size_t lo = bounds[k], hi = bounds[k + 1];
        std::int64_t low = std::numeric_limits<std::int64_t>::max(), high = std::numeric_limits<std::int64_t>::min();
        for (std::size_t i = lo; i < hi; ++i) {
            low = std::min(low, starts[i]);
            high = std::max(high, starts[i]);
        }
        const std::uint64_t span = std::uint64_t(high) - std::uint64_t(low);
        if (span >> 32) {
            std::iota(order.begin() + std::ptrdiff_t(lo), order.begin() + std::ptrdiff_t(hi), std::uint32_t(lo));
            std::stable_sort(order.begin() + std::ptrdiff_t(lo), order.begin() + std::ptrdiff_t(hi), less);
            return;
        }
        std::vector<std::uint64_t>& v = keys[worker];
        std::vector<std::uint64_t>& w = spare[worker];
        v.resize(hi - lo);
        w.resize(hi - lo);
        for (std::size_t i = lo; i < hi; ++i)
            v[i - lo] = (std::uint64_t(starts[i]) - std::uint64_t(low)) << 32 | std::uint64_t(i - lo);
        constexpr unsigned kBits = 11;
        for (unsigned shift = 32; shift < 64 && (span >> (shift - 32)) != 0; shift += kBits) {
            std::uint32_t count[(1u << kBits) + 1] = {};
            for (std::uint64_t x : v) ++count[((x >> shift) & ((1u << kBits) - 1)) + 1];
            for (unsigned d = 1; d <= (1u << kBits); ++d) count[d] += count[d - 1];
            for (std::uint64_t x : v) w[count[(x >> shift) & ((1u << kBits) - 1)]++] = x;
            v.swap(w);
        }
        for (std::size_t i = 0; i < v.size();) {
            std::size_t j = i + 1;
            while (j < v.size() && v[j] >> 32 == v[i] >> 32) ++j;
            auto byEnd = [&](std::uint64_t x, std::uint64_t y) {
                return end(lo + (x & 0xFFFFFFFF)) < end(lo + (y & 0xFFFFFFFF));
            };
            if (j - i > 64) {
                std::stable_sort(v.begin() + std::ptrdiff_t(i), v.begin() + std::ptrdiff_t(j), byEnd);
            } else { // a few rows (most): by insertion, stable
                for (std::size_t a = i + 1; a < j; ++a) {
                    const std::uint64_t x = v[a];
                    std::size_t b = a;
                    for (; b > i && byEnd(x, v[b - 1]); --b) v[b] = v[b - 1];
                    v[b] = x;
                }
            }
            i = j;
        }
        for (std::size_t i = lo; i < hi; ++i) order[i] = std::uint32_t(lo + (v[i - lo] & 0xFFFFFFFF));
    });
    auto at = [&](std::size_t i) { return order.begin() + std::ptrdiff_t(i); };
    std::size_t joined = 1; // blocks [0, joined) are one sorted run
    for (; joined + 1 < bounds.size(); ++joined) {
        const std::size_t mid = bounds[joined], hi = bounds[joined + 1];
        // The run's rows after the block's first, and the block's rows before the run's last.
        const auto from = std::upper_bound(at(mid - std::min(mid, kBlock)), at(mid), order[mid], less);
        const auto to = std::lower_bound(at(mid), at(hi), order[mid - 1], less);
        if (from == at(mid - kBlock) && mid > kBlock && less(order[mid], order[mid - kBlock - 1]))
            break; // the block reaches further back than a block
        std::inplace_merge(from, at(mid), to, less);
    }
    if (joined + 1 < bounds.size()) {
        bounds.erase(bounds.begin() + 1, bounds.begin() + std::ptrdiff_t(joined)); // the run is one part
        RowOrder merged(order.size());
        while (bounds.size() > 2) {
            std::vector<std::size_t> next;
            for (std::size_t k = 0; k + 1 < bounds.size(); k += 2) next.push_back(bounds[k]);
            next.push_back(bounds.back());
            parallelFor(next.size() - 1, t, [&](std::size_t m, unsigned) {
                const std::size_t lo = bounds[2 * m], mid = bounds[std::min(2 * m + 1, bounds.size() - 1)],
                                  hi = bounds[std::min(2 * m + 2, bounds.size() - 1)];
                std::merge(at(lo), at(mid), at(mid), at(hi), merged.begin() + std::ptrdiff_t(lo), less);
            });
            order.swap(merged);
            bounds.swap(next);
        }
    }
    // Every column, as its rows and their width (the counts' low and high halves apart).
    struct Column {
        void* data;
        std::size_t width;
    };
    std::vector<Column> columns = {{startNs.data(), 8}, {durationNs.low(), 4}, {src.low(), 2},
                                   {dst.low(), 2},      {srcPort.data(), 2},   {dstPort.data(), 2},
                                   {proto.data(), 1},   {bytes.low(), 4},      {packets.low(), 4}};
    for (CountColumn* c : {&durationNs, &bytes, &packets})
        if (c->wide()) columns.push_back({c->high(), 4});
    for (IdColumn* c : {&src, &dst})
        if (c->wide()) columns.push_back({c->high(), 2});
    if (m_congestion)
        for (auto* c : {&retransmits, &cnps, &ecnCe}) columns.push_back({c->data(), 4});
    auto each = [](const Column& c, auto fn) {
        switch (c.width) {
        case 8: fn(static_cast<std::uint64_t*>(c.data)); break;
        case 4: fn(static_cast<std::uint32_t*>(c.data)); break;
        case 2: fn(static_cast<std::uint16_t*>(c.data)); break;
        default: fn(static_cast<std::uint8_t*>(c.data)); break;
        }
    };
    // How far back a row's place before the sort lies: within a ring's reach (64K rows, 512 KB for a column of
    // 8 bytes), each column is permuted in place, the columns side by side; else through one scratch column.
    // Either way the memory is taken before any column moves: a failed allocation leaves the table as it was.
    std::size_t back = 0;
    for (std::size_t i = 0; i < order.size(); ++i)
        back = std::max<std::size_t>(back, i - std::min<std::size_t>(i, order[i]));
    constexpr std::size_t kRing = std::size_t(1) << 16;
    if (back < kRing) {
        std::size_t mask = 1;
        while (mask <= back) mask <<= 1;
        mask -= 1; // a power of two above `back`, less one
        const std::unique_ptr<std::uint64_t[]> rings(new std::uint64_t[columns.size() * (mask + 1)]);
        // Columns of one width go up to four at a time, through one read of the order (it was read once a column).
        std::vector<std::vector<std::size_t>> groups;
        for (std::size_t width : {8, 4, 2, 1}) {
            std::vector<std::size_t> group;
            for (std::size_t k = 0; k < columns.size(); ++k) {
                if (columns[k].width != width) continue;
                group.push_back(k);
                if (group.size() == 4) groups.push_back(std::exchange(group, {}));
            }
            if (!group.empty()) groups.push_back(group);
        }
        parallelFor(groups.size(), t, [&](std::size_t g, unsigned) {
            const std::vector<std::size_t>& group = groups[g];
            each(columns[group[0]], [&](auto* first) {
                using T = std::remove_pointer_t<decltype(first)>;
                std::array<T*, 4> v{}, ring{};
                for (std::size_t m = 0; m < group.size(); ++m) {
                    v[m] = static_cast<T*>(columns[group[m]].data);
                    ring[m] = reinterpret_cast<T*>(rings.get() + group[m] * (mask + 1));
                }
                switch (group.size()) {
                case 1: permuteNear<T, 1>(v, order, mask, ring); break;
                case 2: permuteNear<T, 2>(v, order, mask, ring); break;
                case 3: permuteNear<T, 3>(v, order, mask, ring); break;
                default: permuteNear<T, 4>(v, order, mask, ring); break;
                }
            });
        });
        return;
    }
    const std::unique_ptr<std::byte[]> scratch(new std::byte[size() * 8]);
    for (const Column& c : columns) each(c, [&](auto* v) { permute(v, order, scratch.get(), t); });
}

std::size_t FlowTable::memoryBytes() const {
    return startNs.memoryBytes() + durationNs.memoryBytes() + src.memoryBytes() + dst.memoryBytes() +
           srcPort.capacity() * 2 + dstPort.capacity() * 2 + proto.capacity() + bytes.memoryBytes() +
           packets.memoryBytes() + (retransmits.capacity() + cnps.capacity() + ecnCe.capacity()) * 4 +
           endpoints.memoryBytes();
}

} // namespace prism
