// FileStore: streaming passes over a capture's flow files.
#include "io/file_store.h"

#include "io/capture.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <unordered_map>

namespace prism {

namespace {

constexpr std::size_t kBatch = 1 << 20; // records per streamed batch (~50 MB of columns)
constexpr EndpointId kNoId = ~EndpointId(0);

// Record durations in buckets: exact below 4096 ns, then 4096 buckets per power of two (1/4096 of the value
// wide), so that one more pass over a few buckets gives the exact median and the count near it.
constexpr int kMantissa = 12;
constexpr std::size_t kBuckets = (std::size_t(1) << kMantissa) * 52;

std::size_t bucketOf(std::int64_t v) {
    const auto u = std::uint64_t(std::max<std::int64_t>(v, 0));
    if (u < (std::uint64_t(1) << kMantissa)) return std::size_t(u);
    const int width = std::bit_width(u); // 13..63
    const std::uint64_t mantissa = (u >> (width - kMantissa - 1)) & ((std::uint64_t(1) << kMantissa) - 1);
    return (std::size_t(width - kMantissa) << kMantissa) + std::size_t(mantissa);
}

// [lo, hi] of a bucket.
std::pair<std::int64_t, std::int64_t> bucketRange(std::size_t b) {
    if (b < (std::size_t(1) << kMantissa)) return {std::int64_t(b), std::int64_t(b)};
    const int width = int(b >> kMantissa) + kMantissa; // bit width of its values
    const std::uint64_t mantissa = b & ((std::size_t(1) << kMantissa) - 1);
    const int shift = width - kMantissa - 1;
    const std::uint64_t lo = ((std::uint64_t(1) << kMantissa) | mantissa) << shift;
    return {std::int64_t(lo), std::int64_t(lo + (std::uint64_t(1) << shift) - 1)};
}

} // namespace

std::uint64_t availableMemory() {
    std::uint64_t avail = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        std::uint64_t kb = 0;
        meminfo >> kb;
        meminfo.ignore(64, '\n');
        if (key == "MemAvailable:") avail = kb * 1024;
    }
    std::ifstream cgroup("/sys/fs/cgroup/memory.max");
    std::string limit;
    if (cgroup >> limit && limit != "max") {
        std::uint64_t bytes = 0;
        auto [p, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), bytes);
        if (ec == std::errc{} && bytes && (!avail || bytes < avail)) avail = bytes;
    }
    return avail;
}

std::uint64_t wholeLoadEstimate(const CaptureFiles& files) {
    std::uint64_t bytes = 0;
    for (const FlowFile& f : files.files) {
        std::error_code ec;
        const std::uint64_t size = std::filesystem::file_size(f.path, ec);
        if (!ec) bytes += f.info.gzip ? 6 * size : size;
    }
    return bytes + bytes / 10;
}

std::uint64_t maxRecordsInMemory() { return availableMemory() / 10 * 9 / 90; }

struct FileStore::SpanHistogram {
    std::vector<std::uint64_t> counts[2] = {std::vector<std::uint64_t>(kBuckets, 0),
                                            std::vector<std::uint64_t>(kBuckets, 0)}; // all, RoCE
};

// The overview's counts, gathered batch by batch (in a pass of its own or in scanAll's first).
struct FileStore::OverviewPass {
    StoreOverview o;
    std::vector<bool> seen;                 // per endpoint of the store's table: in a record of the window
    std::vector<std::uint64_t> roceRecords; // per endpoint of the store's table, RoCE records it is in
    bool anyRecord = false;

    void add(FileStore& store, const StoreBatch& b) {
        const FlowTable& t = b.records;
        const std::vector<EndpointId>& map = b.global;
        roceRecords.resize(store.m_global.size(), 0);
        seen.resize(store.m_global.size(), false);
        SpanHistogram& spans = *store.m_spans;
        std::int64_t* granularity = store.m_granularity;
        for (std::size_t i = 0; i < t.size(); ++i) {
            const std::int64_t start = t.startNs[i], end = t.end(i);
            if (!b.use(i)) continue;
            seen[map[t.src[i]]] = seen[map[t.dst[i]]] = true;
            o.firstNs = anyRecord ? std::min(o.firstNs, start) : start;
            o.lastNs = anyRecord ? std::max(o.lastNs, end) : end;
            anyRecord = true;
            const std::size_t bucket = bucketOf(end - start);
            ++spans.counts[0][bucket];
            while (granularity[0] > 1 && start % granularity[0] != 0) granularity[0] /= 1000;
            if (!t.isRoce(i)) {
                ++o.otherRecords;
                o.otherBytes += t.bytes[i];
                continue;
            }
            ++o.roceRecords;
            o.roceBytes += t.bytes[i];
            o.roceFirstNs = store.m_anyRoce ? std::min(o.roceFirstNs, start) : start;
            o.roceLastNs = store.m_anyRoce ? std::max(o.roceLastNs, end) : end;
            store.m_anyRoce = true;
            ++spans.counts[1][bucket];
            while (granularity[1] > 1 && start % granularity[1] != 0) granularity[1] /= 1000;
            ++roceRecords[map[t.src[i]]];
            if (t.dst[i] != t.src[i]) ++roceRecords[map[t.dst[i]]];
        }
    }
};

// The exact median and the count near it: which buckets to read exactly (from the histogram), then their
// values batch by batch, then the figures.
struct FileStore::ResolutionPass {
    int which = 0; // 0: all records, 1: RoCE records
    std::uint64_t n = 0, k = 0, before = 0;
    std::size_t median = 0;
    std::vector<bool> exact;
    std::map<std::int64_t, std::uint64_t> values;

    explicit ResolutionPass(const FileStore& store) : which(store.m_anyRoce ? 1 : 0), exact(kBuckets, false) {
        const std::vector<std::uint64_t>& hist = store.m_spans->counts[which];
        for (std::uint64_t c : hist) n += c;
        if (!n) return;
        // The bucket of the upper median (index n/2 of the sorted spans).
        k = n / 2;
        while (before + hist[median] <= k) before += hist[median++];
        const auto [bLo, bHi] = bucketRange(median);
        // The median m lies in [bLo, bHi], so m - m/10 lies in e1 and m + m/10 in e2: the buckets meeting them
        // (and the median's) are read exactly; every other bucket is wholly inside the window or wholly outside.
        const std::pair<std::int64_t, std::int64_t> e1{std::max<std::int64_t>(0, bLo - bHi / 10 - 1),
                                                       bHi - bLo / 10 + 1};
        const std::int64_t top = std::numeric_limits<std::int64_t>::max();
        const std::pair<std::int64_t, std::int64_t> e2{bLo + bLo / 10 - 1, bHi > top / 2 ? top : bHi + bHi / 10 + 1};
        exact[median] = true;
        for (auto [a, b] : {e1, e2})
            for (std::size_t j = bucketOf(a); j <= bucketOf(b) && j < kBuckets; ++j) exact[j] = true;
    }

    void add(const FileStore& store, const FlowTable& t) {
        if (!n) return;
        for (std::size_t i = 0; i < t.size(); ++i) {
            if ((which == 1 && !t.isRoce(i)) || !store.inWindow(t.startNs[i])) continue;
            const auto span = std::int64_t(t.durationNs[i]); // (end - start, never overflowing)
            if (exact[bucketOf(span)]) ++values[span];
        }
    }

    TimeResolution finish(const FileStore& store) const {
        const std::vector<std::uint64_t>& hist = store.m_spans->counts[which];
        TimeResolution r;
        r.records = n;
        if (!n) return r;
        r.stampGranularityNs = store.m_granularity[which];
        std::uint64_t seen = before;
        for (const auto& [v, c] : values) {
            if (bucketOf(v) != median) continue;
            if (seen + c > k) {
                r.typicalSpanNs = v;
                break;
            }
            seen += c;
        }
        if (r.typicalSpanNs > 0) {
            const std::int64_t m = r.typicalSpanNs, low = m - m / 10, high = m + m / 10;
            std::uint64_t near = 0;
            for (std::size_t j = 0; j < kBuckets; ++j) {
                if (exact[j] || !hist[j]) continue;
                const auto [a, b] = bucketRange(j);
                if (a >= low && b <= high) near += hist[j];
            }
            for (const auto& [v, c] : values)
                if (v >= low && v <= high) near += c;
            r.fixedSpan = near * 2 > n;
        }
        return r;
    }
};

// Where the records of a file start in time, from a pass that read it whole: the file's earliest and latest start,
// and for a plain flows.csv those of each read chunk with the chunk's place, so that a later pass wanting only some
// starts reads only the chunks that may hold them.
struct FileStore::FileIndex {
    struct Starts {
        bool any = false;
        std::int64_t first = 0, last = 0;
        void add(std::int64_t s) {
            first = any ? std::min(first, s) : s;
            last = any ? std::max(last, s) : s;
            any = true;
        }
        bool meets(std::int64_t lo, std::int64_t hi) const { return any && last >= lo && first < hi; }
    };
    struct Piece {
        std::uint64_t byte = 0, line = 0;
        Starts starts;
    };
    bool complete = false;
    // The file as it was indexed: its device and inode (a file renamed over it is another), its size, and its
    // modification and status-change times (a copy that kept the size and mtime, `cp -p` or `rsync -t`, still
    // changes the ctime, which no user can set).
    struct Stamp {
        std::uint64_t dev = 0, ino = 0, size = 0;
        std::int64_t mtimeNs = 0, ctimeNs = 0;
        bool operator==(const Stamp&) const = default;
    };
    Stamp stamp;
    Starts starts;
    std::vector<Piece> pieces; // plain flows.csv: one per read chunk, the first at the file's start

    static Stamp stampOf(const std::string& path) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return {0, 0, UINT64_MAX, -1, -1};
        auto ns = [](const timespec& t) { return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec; };
        return {std::uint64_t(st.st_dev), std::uint64_t(st.st_ino), std::uint64_t(st.st_size), ns(st.st_mtim),
                ns(st.st_ctim)};
    }

    void add(const FlowTable& t, const std::vector<CsvChunkMark>* marks) {
        std::size_t m = 0;
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (marks)
                for (; m < marks->size() && (*marks)[m].row <= i; ++m)
                    pieces.push_back({(*marks)[m].byte, (*marks)[m].line, {}});
            starts.add(t.startNs[i]);
            if (marks) pieces.back().starts.add(t.startNs[i]);
        }
        if (marks)
            for (; m < marks->size(); ++m) pieces.push_back({(*marks)[m].byte, (*marks)[m].line, {}});
    }

    // The part of the plain file that holds every record starting in [lo, hi): from the first chunk that may hold
    // one to the end of the last.
    CsvByteRange range(std::int64_t lo, std::int64_t hi) const {
        std::size_t a = pieces.size(), b = 0;
        for (std::size_t k = 0; k < pieces.size(); ++k)
            if (pieces[k].starts.meets(lo, hi)) {
                a = std::min(a, k);
                b = k;
            }
        if (a == pieces.size()) return {0, 0, 0}; // none
        return {pieces[a].byte, b + 1 < pieces.size() ? pieces[b + 1].byte : UINT64_MAX, pieces[a].line};
    }
};

FileStore::FileStore(const std::vector<std::string>& sources, const LoadOptions& options)
    : FileStore(Found{}, findCaptureFiles(sources, options), options) {}

FileStore::FileStore(Found, CaptureFiles files, const LoadOptions& options)
    : m_files(std::move(files)), m_options(options) {
    for (const FlowFile& f : m_files.files)
        if (f.info.kind == SourceKind::ClickHouse)
            throw InputError({f.path, 0, 0, "a ClickHouse table is a store of its own, not a file of a capture"});
    if (!m_files.topologyPath.empty()) {
        m_topology = readTopologyJson(m_files.topologyPath);
        m_hasTopology = true;
    }
    m_diag = m_files.diagnostics;
}

FileStore::~FileStore() = default;

void FileStore::scan(const std::function<void(const FlowTable&, std::size_t)>& batch, std::int64_t lo,
                     std::int64_t hi) {
    LoadDiagnostics later; // the messages of a file are given once, from the first pass
    LoadDiagnostics& diag = m_scanned ? later : m_diag;
    LoadOptions options = m_options;
    options.progress = {};
    if (m_index.size() != m_files.files.size()) m_index.assign(m_files.files.size(), FileIndex{});
    const bool all = !m_useIndex ||
                     (lo == std::numeric_limits<std::int64_t>::min() && hi == std::numeric_limits<std::int64_t>::max());
    // The pass's progress: the share of the files' bytes behind it (a file skipped counts as read).
    std::vector<double> sizes;
    double total = 0, before = 0;
    for (const FlowFile& f : m_files.files) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(f.path, ec);
        sizes.push_back(ec ? 0.0 : double(size));
        total += sizes.back();
    }
    for (std::size_t k = 0; k < m_files.files.size(); ++k) {
        const FlowFile& f = m_files.files[k];
        FileIndex& index = m_index[k];
        const double at = before, size = sizes[k];
        before += size;
        if (m_interrupt || m_passProgress) // polled each chunk read
            options.progress = [this, at, size, total](double fraction) {
                if (interrupted()) return false;
                return !m_passProgress || total <= 0 ||
                       m_passProgress(std::min(1.0, (at + std::clamp(fraction, 0.0, 1.0) * size) / total));
            };
        if (index.complete && index.stamp != FileIndex::stampOf(f.path)) { // changed: read it whole, and say so
            index = FileIndex{};
            m_diag.addWarning({f.path, 0, 0,
                               "changed since it was first read (its size, times or inode): read as it is now, "
                               "though the jobs and steps found before came from what it held then; open the "
                               "capture again to analyse it anew"});
        }
        if (index.complete && !all && !index.starts.meets(lo, hi)) continue;
        FileIndex built;
        built.stamp = FileIndex::stampOf(f.path);
        const bool plainCsv = f.info.kind == SourceKind::FlowsCsv && !f.info.gzip;
        if (plainCsv) built.pieces.push_back({});
        auto take = [&](const FlowTable& t, const std::vector<CsvChunkMark>* marks, bool csv) {
            if (interrupted()) throw Cancelled();
            if (!index.complete) built.add(t, plainCsv ? marks : nullptr);
            m_recordsRead += t.size();
            if (!t.empty() || !csv) batch(t, k); // a flows.csv's batches as streamFlowsCsv gives rows
        };
        if (f.info.kind == SourceKind::FlowsCsv) {
            CsvByteRange range;
            const bool part = index.complete && plainCsv && !all;
            if (part) range = index.range(lo, hi);
            streamFlowsCsv(
                f.path, options, diag, kBatch,
                [&](const FlowTable& t, const std::vector<CsvChunkMark>& marks) { take(t, &marks, true); },
                part ? &range : nullptr);
        } else {
            take(readFlowSource(f.path, f.info, options, diag), nullptr, false);
        }
        if (!index.complete && built.stamp == FileIndex::stampOf(f.path)) { // unchanged while it was read
            built.complete = true;
            index = std::move(built);
        }
    }
    m_scanned = true;
    ++m_passes;
}

bool FileStore::scanAll(const std::function<void(const StoreBatch&)>& batch) {
    std::vector<std::vector<EndpointId>> toGlobal(m_files.files.size());
    const bool withOverview = !m_overview; // the counts ride on the first pass
    if (withOverview) startOverview();
    const auto each = [&](const FlowTable& t, std::size_t file) {
        std::vector<EndpointId>& map = toGlobal[file];
        while (map.size() < t.endpoints.size()) map.push_back(m_global.intern(t.endpoints.at(EndpointId(map.size()))));
        const StoreBatch b{t, map, m_options.fromNs, m_options.toNs};
        if (withOverview) m_overviewPass->add(*this, b);
        batch(b);
    };
    scan(each, m_options.fromNs, m_options.toNs);
    if (withOverview) finishOverview();
    return true;
}


void FileStore::startOverview() {
    m_overviewPass = std::make_unique<OverviewPass>();
    m_spans = std::make_unique<SpanHistogram>();
    m_granularity[0] = m_granularity[1] = 1'000'000'000;
    m_anyRoce = false;
}

void FileStore::finishOverview() {
    OverviewPass& p = *m_overviewPass;
    StoreOverview o = p.o;
    o.records = o.roceRecords + o.otherRecords;
    o.endpoints = std::uint64_t(std::count(p.seen.begin(), p.seen.end(), true));
    // The warnings loadCapture gives after reading: the topology's, or that there is none.
    if (m_hasTopology) {
        std::vector<std::pair<IpAddr, std::uint64_t>> unknown;
        for (EndpointId e = 0; e < p.roceRecords.size(); ++e)
            if (p.roceRecords[e] && !m_topology.nicByIp(m_global.at(e)))
                unknown.emplace_back(m_global.at(e), p.roceRecords[e]);
        std::sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        checkTopologyOf(m_topology, m_files.topologyPath, unknown, m_diag);
    } else {
        m_diag.addWarning({m_files.source, 0, 0, "no topology.json: each NIC is treated as its own host"});
    }
    m_overview = o;
    m_overviewPass.reset();
}

StoreOverview FileStore::overview() {
    if (!m_overview) scanAll([](const StoreBatch&) {}); // the counts are made by the first pass
    return *m_overview;
}

FlowTable FileStore::groupedRoce(std::int64_t lo, std::int64_t width) {
    RoceGroups groups(lo, width);
    scanAll([&](const StoreBatch& b) {
        const FlowTable& t = b.records;
        for (std::size_t i = 0; i < t.size(); ++i)
            if (t.isRoce(i) && b.use(i))
                groups.add(b.global[t.src[i]], b.global[t.dst[i]], t.srcPort[i], t.startNs[i], t.end(i), t.bytes[i]);
    });
    return groups.table(m_global);
}

FlowTable FileStore::roceRecords(const RecordSelection& selection) {
    return std::move(roceRecords(std::vector<RecordSelection>{selection}).front());
}

std::vector<FlowTable> FileStore::roceRecords(const std::vector<RecordSelection>& selections) {
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    // Per sender address: (selection, from, to) of every selection that wants it.
    struct Want {
        std::uint32_t selection;
        std::int64_t from, to;
    };
    std::unordered_map<IpAddr, std::vector<Want>, IpAddrHash> wanted;
    for (std::uint32_t k = 0; k < selections.size(); ++k) {
        for (const IpAddr& ip : selections[k].whole) wanted[ip].push_back({k, lo, hi});
        for (const SenderRange& r : selections[k].ranges) wanted[r.src].push_back({k, r.from, r.to});
    }
    // Per file, per local endpoint id: what is wanted of it (null: nothing) and its id in each output table.
    struct Local {
        std::vector<const std::vector<Want>*> wants;
        std::vector<std::vector<EndpointId>> outId; // [selection][local id]
    };
    std::vector<Local> local(m_files.files.size());
    for (Local& L : local) L.outId.resize(selections.size());
    std::vector<FlowTable> out(selections.size());
    // The resolution's exact pass rides on the first fetch.
    std::unique_ptr<ResolutionPass> resolution;
    if (!m_resolution && m_overview) resolution = std::make_unique<ResolutionPass>(*this);
    // The starts wanted: those of the selections' ranges (any start for an address wanted whole), within each
    // selection's bound and --from, --to; every start of the window when the resolution rides on this pass.
    std::int64_t from = hi, to = lo;
    for (const RecordSelection& s : selections) {
        if (!s.whole.empty()) from = std::min(from, s.from), to = std::max(to, s.to);
        for (const SenderRange& r : s.ranges)
            from = std::min(from, std::max(r.from, s.from)), to = std::max(to, std::min(r.to, s.to));
    }
    if (resolution) from = lo, to = hi;
    from = std::max(from, m_options.fromNs);
    to = std::max(from, std::min(to, m_options.toNs));
    const auto fetch = [&](const FlowTable& t, std::size_t file) {
        if (resolution) resolution->add(*this, t);
        Local& L = local[file];
        while (L.wants.size() < t.endpoints.size()) {
            auto it = wanted.find(t.endpoints.at(EndpointId(L.wants.size())));
            L.wants.push_back(it == wanted.end() ? nullptr : &it->second);
        }
        for (auto& ids : L.outId) ids.resize(t.endpoints.size(), kNoId);
        if (t.hasCongestion())
            for (FlowTable& o : out)
                if (!o.hasCongestion()) o.enableCongestion();
        for (std::size_t i = 0; i < t.size(); ++i) {
            const auto* ws = L.wants[t.src[i]];
            if (!ws || !t.isRoce(i) || !inWindow(t.startNs[i])) continue;
            const std::int64_t s = t.startNs[i];
            for (const Want& w : *ws) {
                if (s < w.from || s >= w.to) continue;
                FlowTable& o = out[w.selection];
                std::vector<EndpointId>& ids = L.outId[w.selection];
                if (ids[t.src[i]] == kNoId) ids[t.src[i]] = o.endpoints.intern(t.endpoints.at(t.src[i]));
                if (ids[t.dst[i]] == kNoId) ids[t.dst[i]] = o.endpoints.intern(t.endpoints.at(t.dst[i]));
                const EndpointId a = ids[t.src[i]], b = ids[t.dst[i]];
                if (o.hasCongestion())
                    o.append(s, t.end(i), a, b, t.srcPort[i], t.dstPort[i], t.proto[i], t.bytes[i], t.packets[i],
                             t.hasCongestion() ? t.retransmits[i] : 0, t.hasCongestion() ? t.cnps[i] : 0,
                             t.hasCongestion() ? t.ecnCe[i] : 0);
                else o.append(s, t.end(i), a, b, t.srcPort[i], t.dstPort[i], t.proto[i], t.bytes[i], t.packets[i]);
                break; // a record belongs to one job: the nodes of the selections do not overlap
            }
        }
    };
    scan(fetch, from, to);
    if (resolution) m_resolution = resolution->finish(*this);
    for (FlowTable& o : out)
        if (!o.isSortedByStart()) o.sortByStart(m_options.threads);
    return out;
}


TimeResolution FileStore::resolution() {
    if (!m_resolution) {
        overview();
        ResolutionPass pass(*this);
        scan([&](const FlowTable& t, std::size_t) { pass.add(*this, t); }, m_options.fromNs, m_options.toNs);
        m_resolution = pass.finish(*this);
    }
    return *m_resolution;
}

} // namespace prism
