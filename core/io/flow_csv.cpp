// flows.csv reader: streams the file in large chunks (plain or gzip), parses lines in place.
// A fast path parses well-formed rows (SWAR digits, inline IPv4, a cached IPv4 -> endpoint map); any row it
// rejects goes through a slow, forgiving path (trims spaces and quotes) that either accepts the row or says
// exactly what is wrong. Measured ~3.6M records/s plain on one core (bench/bench_ingest.cpp).
#include "io/capture.h"
#include "model/units.h"
#include "io/text_input.h"
#include "util/parallel.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace prism {
namespace {

// Read size, and also the longest line accepted (a flow record is ~100 bytes).
constexpr std::size_t kChunk = std::size_t(4) << 20;
constexpr std::size_t kPad = 16;

enum class Col : std::uint8_t {
    Ignore, StartNs, EndNs, SrcIp, DstIp, SrcPort, DstPort, Proto, Bytes, Packets, Retransmits, Cnps, EcnCe
};

struct ColumnSpec {
    std::string_view name;
    Col col;
    bool required;
};

constexpr ColumnSpec kColumns[] = {
    {"start_ns", Col::StartNs, true}, {"end_ns", Col::EndNs, true},     {"src_ip", Col::SrcIp, true},
    {"dst_ip", Col::DstIp, true},     {"src_port", Col::SrcPort, true}, {"dst_port", Col::DstPort, true},
    {"proto", Col::Proto, true},      {"bytes", Col::Bytes, true},      {"packets", Col::Packets, false},
    // Congestion evidence (packet captures converted by llmprism-cli convert): optional.
    {"retransmits", Col::Retransmits, false}, {"cnps", Col::Cnps, false}, {"ecn_ce", Col::EcnCe, false},
};
constexpr std::string_view kExpectedHeader = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes[,packets]";

std::string_view columnName(Col c) {
    for (const auto& s : kColumns)
        if (s.col == c) return s.name;
    return "column";
}

// Dotted IPv4 with the same rules as IpAddr::parse (no leading zeros, octets <= 255).
// Returns the position after the address, or nullptr when the text there is not an IPv4 address.
[[gnu::always_inline]] inline const char* parseV4(const char* p, const char* e, std::uint32_t& out) {
    std::uint32_t value = 0;
    for (int part = 0; part < 4; ++part) {
        if (part) {
            if (p == e || *p != '.') return nullptr;
            ++p;
        }
        if (p == e || unsigned(*p - '0') > 9) return nullptr;
        std::uint32_t octet = std::uint32_t(*p++ - '0');
        if (p != e && unsigned(*p - '0') <= 9) {
            if (octet == 0) return nullptr; // leading zero
            octet = octet * 10 + std::uint32_t(*p++ - '0');
            if (p != e && unsigned(*p - '0') <= 9) {
                octet = octet * 10 + std::uint32_t(*p++ - '0');
                if (octet > 255 || (p != e && unsigned(*p - '0') <= 9)) return nullptr;
            }
        }
        value = (value << 8) | octet;
    }
    out = value;
    return p;
}

// Fast unsigned decimal parsing, 8 bytes at a time (SWAR, after Lemire). The caller guarantees that 8
// bytes can be read past any position up to the line end and that the byte at the line end is not a digit
// (it is '\r', '\n' or the zeroed padding after the buffer), so no length checks are needed.
inline std::uint64_t load8(const char* p) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
}

// How many of the 8 bytes (first byte lowest, little-endian) are digits before the first non-digit.
inline unsigned leadingDigits(std::uint64_t x) {
    std::uint64_t bad = ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                        (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
    return bad ? unsigned(__builtin_ctzll(bad)) >> 3 : 8;
}

// The value of the first n (1..8) digit bytes of x.
inline std::uint64_t digitsValue(std::uint64_t x, unsigned n) {
    x -= 0x3030303030303030ull; // no borrow below byte n: those bytes are digits
    x <<= 8 * (8 - n);          // keep the n digits, as the high bytes; the low bytes become leading zeros
    x = (x * 10) + (x >> 8);
    return (((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
            (((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
           32;
}

constexpr std::uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

// The digits at p that follow 8 digits worth v (at most 12 more), into v; nullptr when the value overflows.
[[gnu::always_inline]] inline const char* parseU64After8(const char* p, std::uint64_t& v) {
    std::uint64_t x = load8(p);
    unsigned n = leadingDigits(x);
    if (n) {
        v = v * kPow10[n] + digitsValue(x, n);
        p += n;
        if (n == 8) { // 16 digits so far: at most 4 more fit (UINT64_MAX has 20)
            x = load8(p);
            n = leadingDigits(x);
            if (n > 4) return nullptr;
            if (n) {
                std::uint64_t low = digitsValue(x, n);
                if (n == 4 && v > (UINT64_MAX - low) / 10000) return nullptr;
                v = v * kPow10[n] + low;
                p += n;
            }
        }
    }
    return p;
}

// Digits to uint64; nullptr when there is no digit or the value overflows (the slow path explains).
// Several times faster than std::from_chars on 19-digit nanosecond times and branch-light on short fields.
[[gnu::always_inline]] inline const char* parseU64(const char* p, std::uint64_t& out) {
    std::uint64_t x = load8(p);
    unsigned n = leadingDigits(x);
    if (n == 0) return nullptr;
    std::uint64_t v = digitsValue(x, n);
    p += n;
    if (n == 8 && !(p = parseU64After8(p, v))) return nullptr;
    out = v;
    return p;
}

// IPv4 value -> EndpointId, open addressing; saves hashing a 16-byte IpAddr twice per record.
class V4Cache {
public:
    V4Cache() : m_slots(std::size_t(1) << 8, 0) {} // grows with the addresses: a small file pays for 256 slots

    [[gnu::always_inline]] EndpointId get(std::uint32_t key, EndpointTable& table) {
        std::size_t mask = m_slots.size() - 1;
        std::size_t h = hash(key) & mask;
        for (;;) {
            std::uint64_t s = m_slots[h];
            if (s == 0) break;
            if (std::uint32_t(s >> 32) == key) return EndpointId(std::uint32_t(s) - 1);
            h = (h + 1) & mask;
        }
        EndpointId id = table.intern(IpAddr::v4(key));
        m_slots[h] = (std::uint64_t(key) << 32) | (std::uint64_t(id) + 1);
        if (++m_size * 2 > m_slots.size()) grow();
        return id;
    }

private:
    static std::size_t hash(std::uint32_t k) { return std::size_t((std::uint64_t(k) * 0x9E3779B97F4A7C15ull) >> 32); }

    void grow() {
        std::vector<std::uint64_t> old(m_slots.size() * 2, 0);
        old.swap(m_slots);
        std::size_t mask = m_slots.size() - 1;
        for (std::uint64_t s : old) {
            if (!s) continue;
            std::size_t h = hash(std::uint32_t(s >> 32)) & mask;
            while (m_slots[h]) h = (h + 1) & mask;
            m_slots[h] = s;
        }
    }

    std::vector<std::uint64_t> m_slots; // (key << 32) | (id + 1); 0 = empty
    std::size_t m_size = 0;
};

// Bytes [begin, end) of a plain file, read with pread: one part of a parallel parse. The file descriptor is
// shared by the parts and owned by the caller.
class RangeSource {
public:
    RangeSource(const std::string& path, int fd, std::uint64_t begin, std::uint64_t end)
        : m_path(path), m_fd(fd), m_begin(begin), m_pos(begin), m_end(end) {}

    std::size_t read(char* buf, std::size_t n) {
        n = std::size_t(std::min<std::uint64_t>(n, m_end - m_pos));
        std::size_t got = 0;
        while (got < n) {
            const ssize_t r = ::pread(m_fd, buf + got, n - got, off_t(m_pos + got));
            if (r == 0) break; // the file shrank under us: its end is the end
            if (r < 0) {
                if (errno == EINTR) continue;
                throw InputError({m_path, 0, 0, std::string("read error: ") + std::strerror(errno)});
            }
            got += std::size_t(r);
        }
        m_pos += got;
        if (got < n) m_pos = m_end;
        return got;
    }
    double fraction() const { return m_end > m_begin ? double(m_pos - m_begin) / double(m_end - m_begin) : 1.0; }
    const std::string& streamError() const { return m_none; }

private:
    const std::string& m_path;
    int m_fd;
    std::uint64_t m_begin, m_pos, m_end;
    std::string m_none;
};

// The first line start (after a '\n') at or after `target`, looking at most `within` bytes on; `size` (the end of the
// data) when there is none.
std::uint64_t lineStartFrom(int fd, std::uint64_t target, std::uint64_t size, std::uint64_t within) {
    std::vector<char> window(std::size_t(1) << 16);
    // The first line start after target - 1: a line that starts exactly at target stays whole.
    for (std::uint64_t at = target - 1; at < size && at < target + within;) {
        const ssize_t n =
            ::pread(fd, window.data(), std::size_t(std::min<std::uint64_t>(window.size(), size - at)), off_t(at));
        if (n <= 0) break;
        if (const void* nl = std::memchr(window.data(), '\n', std::size_t(n)))
            return std::min(size, at + std::uint64_t(static_cast<const char*>(nl) - window.data()) + 1);
        at += std::uint64_t(n);
    }
    return size;
}

// A plain flows file opened for pread by the parts of a parallel read; closed when it goes.
struct OpenFile {
    explicit OpenFile(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        if (fd < 0) throw InputError({path, 0, 0, std::string("cannot open the flows file: ") + std::strerror(errno)});
    }
    ~OpenFile() { ::close(fd); }
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    int fd;
};

// The size of a regular file; 0 for anything else (a pipe, a device) or when it cannot be told.
std::uint64_t regularSize(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? std::uint64_t(st.st_size) : 0;
}

// The starts of `parts` byte ranges of about equal size that cover [from, size) of the file, each at the start
// of a line (after a '\n'); fewer when lines are too long to cut there.
std::vector<std::uint64_t> lineCuts(int fd, std::uint64_t from, std::uint64_t size, unsigned parts) {
    std::vector<std::uint64_t> cuts{from};
    for (unsigned k = 1; k < parts; ++k) {
        const std::uint64_t target = from + (size - from) * k / parts;
        if (target <= cuts.back()) continue;
        const std::uint64_t cut = lineStartFrom(fd, target, size, kChunk);
        if (cut < size) cuts.push_back(cut);
    }
    cuts.push_back(size);
    return cuts;
}

class CsvReader {
public:
    using BatchFn = std::function<void(const FlowTable&, const std::vector<CsvChunkMark>&)>;

    CsvReader(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag)
        : m_path(path), m_options(options), m_diag(diag) {}

    // Streaming: every `records` rows (and at the end) the rows read so far go to `batch`, then are cleared
    // (the endpoint table is kept, so ids stay the same from batch to batch). Rows come in file order.
    void streamTo(std::size_t records, const BatchFn& batch) {
        m_batchRecords = std::max<std::size_t>(records, 1);
        m_batch = &batch;
        m_markChunks = true;
    }

    FlowTable run(const CsvByteRange* range = nullptr) {
        ByteSource src(m_path);
        m_progress = m_options.progress;
        if (range && m_batch && !src.gzip() && (range->from > 0 || range->to != UINT64_MAX)) {
            readRange(src, *range);
            return {};
        }
        Chunk chunk(src.sizeHint());
        bool more = step(src, chunk, std::size_t(64) << 10); // the header, and a sample of rows to size the parts
        const std::uint64_t size = regularSize(m_path);      // 0 for a pipe or a device: read as it comes
        const bool parallel = more && !m_batch && !src.gzip() && !m_options.strict && m_header && !m_skipping &&
                              size > 0 && size >= m_bytesSeen + m_options.parallelFromBytes &&
                              threadCount(m_options.threads) > 1;
        if (parallel) {
            parseRestInParallel(m_bytesSeen, size);
        } else if (more && streamsInParallel(src.gzip(), m_bytesSeen, size)) {
            streamInParallel(m_bytesSeen, size);
        } else if (src.gzip() && threadCount(m_options.threads) > 1) {
            ReadAhead ahead(src); // inflated on the other core while this one parses
            while (more) more = step(ahead, chunk);
        } else {
            while (more) more = step(src, chunk);
        }
        if (!src.streamError().empty()) {
            InputIssue issue{m_path, m_line + 1, 0,
                             src.streamError() + "; rows before line " + std::to_string(m_line + 1) + " were kept"};
            if (m_options.strict) throw InputError(issue);
            // A whole-file problem goes first, even when garbage rows before it filled the message list.
            std::size_t stored = m_diag.errors.size();
            m_diag.addError(issue);
            if (m_diag.errors.size() == stored && !m_diag.errors.empty()) m_diag.errors.back() = std::move(issue);
            std::rotate(m_diag.errors.begin(), m_diag.errors.end() - 1, m_diag.errors.end());
        }
        if (!m_header)
            m_diag.addWarning({m_path, 0, 0,
                               std::string("no header row: the file has no data (expected the columns ") +
                                   std::string(kExpectedHeader) + ")"});
        if (m_batch) {
            if (!m_table.empty() || !m_marks.empty()) (*m_batch)(m_table, m_marks);
            return {};
        }
        m_table.sortByStart();
        return std::move(m_table);
    }

private:
    // Streams bytes [from, to) of the plain file: its header first (from the file's start, its rows not read),
    // then the range's rows, numbered from the range's line.
    void readRange(ByteSource& src, const CsvByteRange& range) {
        if (range.from > 0) {
            Chunk head(src.sizeHint());
            m_headerOnly = true;
            // The first read as run()'s (64 KiB), then whole chunks: a header or comment line longer than 64 KiB
            // must go on being read (asking for 64 KiB more of a 64 KiB buffer would read nothing: the end).
            bool more = step(src, head, std::size_t(64) << 10);
            while (more && !m_header) more = step(src, head);
            m_headerOnly = false;
            if (!m_header) return; // no header: the file has no rows
            m_line = range.line;
            m_bytesSeen = m_bytesFrom = range.from;
            m_atStart = false;
            m_skipping = false;
        }
        const OpenFile file(m_path);
        const int fd = file.fd;
        struct stat st {};
        const std::uint64_t size = ::fstat(fd, &st) == 0 ? std::uint64_t(st.st_size) : range.to;
        const std::uint64_t to = std::min(range.to, size);
        if (range.from >= to) return;
        RangeSource part(m_path, fd, range.from, to);
        Chunk chunk(to - range.from);
        bool more = range.from > 0 || step(part, chunk, std::size_t(64) << 10); // from the start: the header first
        if (more && streamsInParallel(false, m_bytesSeen, to)) {
            streamInParallel(m_bytesSeen, to);
        } else {
            while (more) more = step(part, chunk);
        }
        if (!m_table.empty() || !m_marks.empty()) (*m_batch)(m_table, m_marks);
    }

    // The read buffer: kPad zeroed bytes after the data let parseU64 read 8 bytes at a time without length
    // checks.
    // Sized to the data when that is known to be smaller than kChunk (a small file reads with a small buffer),
    // grown to kChunk when a line does not fit. Data of unknown size (.gz) starts at 64 KiB and doubles while the
    // reads fill it: a small .gz does not pay for a 4 MiB buffer.
    struct Chunk {
        explicit Chunk(std::uint64_t dataBytes = kChunk)
            : cap(dataBytes == UINT64_MAX ? std::size_t(64) << 10 : readBufferSize(dataBytes, kChunk)),
              buf(new char[cap + kPad]), open(dataBytes == UINT64_MAX) {}
        std::size_t cap;
        std::unique_ptr<char[]> buf;
        bool open;          // the data's size is unknown
        bool filled = false; // the last read gave all it was asked for
        std::size_t have = 0;
        void grow(std::size_t to) {
            std::unique_ptr<char[]> bigger(new char[to + kPad]);
            std::memcpy(bigger.get(), buf.get(), have);
            buf = std::move(bigger);
            cap = to;
        }
    };

    // Reads and parses the next chunk of `src` (the lines it completes); false at the end of the data.
    template <typename Source> bool step(Source& src, Chunk& c, std::size_t limit = kChunk) {
        if (c.have == c.cap && c.cap < kChunk) c.grow(c.open ? std::min(2 * c.cap, kChunk) : kChunk);
        else if (c.open && c.filled && c.cap < kChunk) c.grow(std::min(2 * c.cap, kChunk));
        const std::size_t want = std::min(std::max(limit, c.have), c.cap) - c.have;
        if (m_markChunks && m_header && !m_skipping) m_marks.push_back({m_table.size(), m_bytesSeen, m_line});
        std::size_t n = src.read(c.buf.get() + c.have, want);
        c.filled = n > 0 && n == want;
        const bool eof = n == 0;
        c.have += n;
        std::memset(c.buf.get() + c.have, 0, kPad);
        if (m_progress && !m_progress(std::max(0.0, src.fraction()))) {
            if (m_cancel) *m_cancel = true;
            throw Cancelled();
        }
        if (m_cancel && m_cancel->load(std::memory_order_relaxed)) throw Cancelled();
        if (m_header && !eof && !m_batch) reserveFor(c.have, src.fraction());
        // A broken gzip stream: the partial line at the break is not trusted, the rest is kept.
        bool lastLineComplete = !eof || src.streamError().empty();
        std::size_t used = processLines(c.buf.get(), c.have, eof, lastLineComplete);
        m_bytesSeen += used;
        std::memmove(c.buf.get(), c.buf.get() + used, c.have - used);
        c.have -= used;
        if (m_options.maxRecords && recordsHeld(m_table.size(), m_table.endpoints.size()) > m_options.maxRecords &&
            !m_batch) {
            if (m_cancel) *m_cancel = true; // the other parts stop too
            throw InputError({m_path, m_line, 0,
                              "more than " + formatCount(m_options.maxRecords) +
                                  " records, more than fit in the memory available" +
                                  std::string(m_path.ends_with(".gz") ? " (the .gz file inflates far beyond its size)"
                                                                      : "") +
                                  ": " + kStagedAdvice});
        }
        if (m_batch && m_table.size() >= m_batchRecords) {
            (*m_batch)(m_table, m_marks);
            m_table.clearRecords();
            m_marks.clear();
        }
        if (!eof && c.have == c.cap && c.cap == kChunk) {
            overlongLine(c.buf.get(), c.have);
            m_bytesSeen += c.have; // (the chunk marks are file offsets)
            c.have = 0;
        }
        return !eof;
    }

    // Whether a stream reads bytes [from, to) of the file in parallel parts: a plain file, lenient, the header
    // known, at least parallelFromBytes to read, more than one thread.
    bool streamsInParallel(bool gzip, std::uint64_t from, std::uint64_t to) const {
        return m_batch && !gzip && !m_options.strict && m_header && !m_skipping && to > from &&
               to - from >= m_options.parallelFromBytes && threadCount(m_options.threads) > 1;
    }

    // Streams bytes [from, to) of the file (`from` a line start after the header) in parts of kStreamPart bytes cut
    // at line starts, parsed ahead by threads - 1 helper threads and by this one whenever the next part is not
    // ready yet (each part into its own table, with its own messages and chunk marks), and given in file order:
    // lines renumbered, messages merged, each part a batch with its endpoints interned in this reader's table
    // (ids stay the same from batch to batch) — so the parse of the next parts overlaps the caller's work on this
    // one. Rows and messages are those of a sequential stream; the marks fall at each part's start and every chunk
    // after it; a batch is a part (about kStreamPart bytes of rows), not batchRecords.
    void streamInParallel(std::uint64_t from, std::uint64_t to) {
        const OpenFile file(m_path);
        const int fd = file.fd;
        constexpr std::uint64_t kStreamPart = std::uint64_t(8) << 20;
        const unsigned threads = threadCount(m_options.threads);
        const std::size_t ahead = 2 * std::size_t(threads); // parts parsed beyond the one to give next
        LoadOptions options = m_options;                    // a stream holds no more than a batch: no whole-read limit
        options.maxRecords = 0;
        options.progress = {};
        if (!m_table.empty() || !m_marks.empty()) { // the rows read before (the header's chunk): a batch of their own
            (*m_batch)(m_table, m_marks);
            m_table.clearRecords();
            m_marks.clear();
        }
        std::vector<std::uint64_t> cuts{from};
        while (cuts.back() < to)
            cuts.push_back(to - cuts.back() <= kStreamPart ? to : lineStartFrom(fd, cuts.back() + kStreamPart, to, to));
        const std::size_t parts = cuts.size() - 1;
        // Each part's table sized from the rows per byte seen so far (the first chunk's); tables are reused (fresh
        // memory for each part cost more in page faults than the parallel parse saved).
        const double rowsPerByte = m_bytesSeen > 0 ? double(m_line) / double(m_bytesSeen) : 0.0;
        struct Slot {
            LoadDiagnostics diag;
            std::unique_ptr<CsvReader> reader;
            std::exception_ptr error;
            bool ready = false;
        };
        std::vector<Slot> slots(parts);
        std::vector<FlowTable> spare;
        std::mutex mutex;
        std::condition_variable changed;
        std::size_t claimed = 0, given = 0;
        bool stop = false;
        std::atomic<bool> cancel{false};
        auto claimable = [&] { return !stop && claimed < parts && claimed < given + ahead; };
        auto parse = [&](std::size_t k, std::unique_lock<std::mutex>& lock) { // called locked, parses unlocked
            FlowTable table;
            if (!spare.empty()) {
                table = std::move(spare.back());
                spare.pop_back();
            }
            lock.unlock();
            std::unique_ptr<CsvReader> r;
            std::exception_ptr error;
            try {
                r = std::make_unique<CsvReader>(m_path, options, slots[k].diag);
                r->m_cols = m_cols;
                r->m_congestion = m_congestion;
                r->m_header = true;
                r->m_atStart = false;
                r->m_markChunks = true;
                r->m_bytesSeen = r->m_bytesFrom = cuts[k];
                r->m_cancel = &cancel;
                r->m_table = std::move(table);
                if (m_congestion && !r->m_table.hasCongestion()) r->m_table.enableCongestion();
                r->m_table.reserve(std::size_t(double(cuts[k + 1] - cuts[k]) * rowsPerByte * 1.02) + 1024);
                RangeSource part(m_path, fd, cuts[k], cuts[k + 1]);
                Chunk chunk(cuts[k + 1] - cuts[k]);
                while (r->step(part, chunk)) {}
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            slots[k].reader = std::move(r);
            slots[k].error = error;
            slots[k].ready = true;
            changed.notify_all();
        };
        std::vector<std::thread> helpers;
        auto finish = [&] {
            {
                std::lock_guard<std::mutex> lock(mutex);
                stop = true;
            }
            cancel = true;
            changed.notify_all();
            for (std::thread& t : helpers) t.join();
        };
        helpers.reserve(threads);
        try {
            for (unsigned h = 1; h < threads; ++h) {
                if (!startThread(helpers, [&] {
                        std::unique_lock<std::mutex> lock(mutex);
                        for (;;) {
                            changed.wait(lock, [&] { return stop || claimed >= parts || claimable(); });
                            if (stop || claimed >= parts) return;
                            parse(claimed++, lock);
                        }
                    }))
                    break; // fewer helpers: this thread parses what they would have
            }
            for (std::size_t k = 0; k < parts; ++k) {
                std::unique_ptr<CsvReader> r;
                {
                    std::unique_lock<std::mutex> lock(mutex);
                    while (!slots[k].ready) {
                        if (claimable()) parse(claimed++, lock); // this thread parses too while it waits
                        else changed.wait(lock);
                    }
                    if (slots[k].error) std::rethrow_exception(slots[k].error);
                    r = std::move(slots[k].reader);
                }
                mergePart(slots[k].diag);
                slots[k].diag = LoadDiagnostics{};
                givePart(*r);
                m_line += r->m_line;
                m_bytesSeen = cuts[k + 1];
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    spare.push_back(std::move(r->m_table));
                    spare.back().clearRecords();
                    spare.back().endpoints = EndpointTable{};
                    ++given;
                }
                changed.notify_all();
                if (m_progress && !m_progress(double(cuts[k + 1]) / double(std::max<std::uint64_t>(to, 1))))
                    throw Cancelled();
            }
        } catch (...) {
            finish();
            throw;
        }
        finish();
    }

    // Merges the messages of a part read after this reader's m_line lines, their lines renumbered as in the file.
    void mergePart(LoadDiagnostics& part) {
        for (InputIssue& e : part.errors) e.line += e.line ? m_line : 0;
        for (InputIssue& w : part.warnings) w.line += w.line ? m_line : 0;
        m_diag.merge(part);
    }

    // Gives the rows of a part read after this reader's m_line lines as a batch: its endpoints interned in this
    // reader's table and its ids rewritten to that table's, which the batch is given with; its marks placed.
    void givePart(CsvReader& part) {
        FlowTable& t = part.m_table;
        std::vector<EndpointId> ids(t.endpoints.size());
        for (EndpointId e = 0; e < ids.size(); ++e) ids[e] = m_table.endpoints.intern(t.endpoints.at(e));
        for (IdColumn* c : {&t.src, &t.dst})
            for (std::size_t i = 0; i < c->size(); ++i) c->set(i, ids[(*c)[i]]);
        for (CsvChunkMark& m : part.m_marks) m.line += m_line;
        if (t.empty() && part.m_marks.empty()) return;
        std::swap(t.endpoints, m_table.endpoints);
        struct SwapBack {
            FlowTable& a;
            FlowTable& b;
            ~SwapBack() { std::swap(a.endpoints, b.endpoints); }
        } back{t, m_table};
        (*m_batch)(t, part.m_marks);
    }

    // The file from `from` (a line start after the header) to `size`, cut at line starts into one part per
    // thread, each parsed into its own table with its own messages (lines counted from the part's start);
    // then the parts in file order: their lines renumbered, their messages merged, their records appended.
    void parseRestInParallel(std::uint64_t from, std::uint64_t size) {
        const OpenFile file(m_path);
        const int fd = file.fd;
        const unsigned threads = threadCount(m_options.threads);
        const std::vector<std::uint64_t> cuts = lineCuts(fd, from, size, threads);
        const std::size_t parts = cuts.size() - 1;
        std::vector<LoadDiagnostics> diags(parts);
        std::vector<std::unique_ptr<CsvReader>> readers;
        // Rows like the first chunk's, 2% over. The first part goes on with the rows read so far, in room for
        // every part's rows: the others are then appended to it, and only theirs are copied.
        const double rowsPerByte = m_bytesSeen > 0 ? double(m_table.size()) / double(m_bytesSeen) : 0.0;
        auto rowsIn = [&](std::uint64_t bytes) { return std::size_t(double(bytes) * rowsPerByte * 1.02) + 1024; };
        for (std::size_t k = 0; k < parts; ++k) {
            readers.push_back(std::make_unique<CsvReader>(m_path, m_options, diags[k]));
            CsvReader& r = *readers.back();
            r.m_cols = m_cols;
            r.m_congestion = m_congestion;
            r.m_header = true;
            r.m_atStart = false;
            if (k == 0) {
                r.m_table = std::move(m_table);
                if (rowsPerByte > 0) r.m_table.reserve(r.m_table.size() + rowsIn(size - from));
            } else {
                if (m_congestion) r.m_table.enableCongestion();
                if (rowsPerByte > 0) r.m_table.reserve(rowsIn(cuts[k + 1] - cuts[k]));
            }
        }
        std::atomic<bool> cancel{false};
        const double before = double(from) / double(size);
        parallelFor(parts, threads, [&](std::size_t k, unsigned worker) {
            CsvReader& r = *readers[k];
            r.m_cancel = &cancel;
            if (worker == 0 && m_options.progress) // the parts move alike: one stands for all
                r.m_progress = [&](double f) { return m_options.progress(before + (1.0 - before) * f); };
            RangeSource part(m_path, fd, cuts[k], cuts[k + 1]);
            Chunk chunk(cuts[k + 1] - cuts[k]);
            while (r.step(part, chunk)) {
            }
        });
        std::vector<FlowTable> tables;
        for (std::size_t k = 0; k < parts; ++k) {
            mergePart(diags[k]);
            m_line += readers[k]->m_line;
            tables.push_back(std::move(readers[k]->m_table));
            readers[k].reset();
        }
        m_table = FlowTable::concatenate(std::move(tables));
    }

    // Processes every complete line in buf[0, have); at the end of the data also the last, unterminated one.
    std::size_t processLines(char* buf, std::size_t have, bool eof, bool lastLineComplete) {
        const char* p = buf;
        const char* end = buf + have;
        if (m_atStart) {
            if (have < 3 && !eof) return 0; // wait for enough bytes to see a BOM
            if (have >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
            m_atStart = false;
        }
        bool canonical = m_header && canonicalHeader(); // (set again once the header is read)
        while (p < end) {
            if (canonical && !m_skipping) {
                if (const char* next = canonicalLine(p, end)) {
                    ++m_line;
                    p = next;
                    continue;
                }
            }
            const char* nl = static_cast<const char*>(std::memchr(p, '\n', std::size_t(end - p)));
            if (m_skipping) { // the rest of an overlong line, already reported
                if (!nl) return have;
                m_skipping = false;
                p = nl + 1;
                continue;
            }
            if (!nl && !eof) break;
            const char* lineEnd = nl ? nl : end;
            if (!nl && !lastLineComplete) break;
            ++m_line;
            const char* e = lineEnd;
            if (e > p && e[-1] == '\r') --e;
            if (e != p && *p != '#') {
                if (!m_header) {
                    header(p, e);
                    canonical = m_header && canonicalHeader();
                    if (m_header && m_headerOnly) return std::size_t((nl ? nl + 1 : end) - buf);
                } else if (!(canonical ? canonicalRow(p, e) : fastRow(p, e))) {
                    slowRow(p, e);
                }
            }
            p = nl ? nl + 1 : end;
        }
        return std::size_t(p - buf);
    }

    void overlongLine(const char* buf, std::size_t have) {
        ++m_line;
        m_skipping = true;
        bool binary = findBinary(buf, buf + have) != nullptr;
        std::string what =
            binary ? std::string("binary data: not a text CSV file")
                   : "line is longer than " + std::to_string(kChunk >> 20) + " MiB (expected a flow record)";
        if (!m_header) throw InputError({m_path, m_line, 0, what + " (looking for the header row)"});
        rowError(0, [&] { return std::string(what); });
    }

    void header(const char* p, const char* e) {
        std::string_view line(p, std::size_t(e - p));
        if (trimField(line).empty() || trimField(line).front() == '#') return; // blank or indented comment
        if (findBinary(p, e)) throw InputError({m_path, m_line, 0, "binary data: not a text CSV file"});
        // Otherwise the whole file would read as one header line with no rows after it.
        if (line.find('\r') != std::string_view::npos)
            throw InputError({m_path, m_line, 0, "lines end with a lone CR (classic Mac); expected LF or CRLF"});
        const auto names = headerNames(line);
        m_cols.assign(names.size(), Col::Ignore);
        std::uint32_t seen[std::size(kColumns)] = {};
        for (std::size_t i = 0; i < names.size(); ++i) {
            const std::string& name = names[i];
            for (std::size_t k = 0; k < std::size(kColumns); ++k) {
                if (name != kColumns[k].name) continue;
                if (seen[k]) {
                    m_diag.addWarning({m_path, m_line, std::uint32_t(i + 1),
                                       "column " + name + " appears twice (fields " + std::to_string(seen[k]) +
                                           " and " + std::to_string(i + 1) + "); field " + std::to_string(seen[k]) +
                                           " is used"});
                } else {
                    seen[k] = std::uint32_t(i + 1);
                    m_cols[i] = kColumns[k].col;
                }
            }
        }
        std::string missing;
        bool anyKnown = false;
        for (std::size_t k = 0; k < std::size(kColumns); ++k) {
            if (seen[k])
                anyKnown = true;
            else if (kColumns[k].required)
                missing += (missing.empty() ? "" : ", ") + std::string(kColumns[k].name);
        }
        if (!missing.empty()) {
            std::string found;
            // The first 20 (a header of thousands of fields is not a flows.csv header: naming them all would
            // make the message as long as the line).
            constexpr std::size_t kNamed = 20;
            for (std::size_t i = 0; i < names.size() && i < kNamed; ++i) found += (i ? ", " : "") + quoted(names[i]);
            if (names.size() > kNamed) found += " and " + std::to_string(names.size() - kNamed) + " more";
            std::string msg = anyKnown ? "missing required column(s) " + missing
                                       : "no header row: missing required column(s) " + missing;
            throw InputError({m_path, m_line, 0,
                              msg + "; found columns " + found + " (expected " + std::string(kExpectedHeader) + ")"});
        }
        for (Col c : m_cols)
            if (c == Col::Retransmits || c == Col::Cnps || c == Col::EcnCe) m_congestion = true;
        if (m_congestion) m_table.enableCongestion();
        m_header = true;
    }

    // Unsigned fields up to `max`; plain digits only (anything else is left to slowRow).
    template <typename T>
    [[gnu::always_inline]] static bool num(const char*& p, T& v) {
        std::uint64_t x = 0;
        const char* q = parseU64(p, x);
        if (!q || x > std::uint64_t(std::numeric_limits<T>::max())) return false;
        v = T(x);
        p = q;
        return true;
    }

    [[gnu::always_inline]] static bool num(const char*& p, std::int64_t& v) {
        bool negative = *p == '-'; // p <= line end, and the byte at the line end is readable
        std::uint64_t x = 0;
        const char* q = parseU64(p + negative, x);
        if (!q || x > std::uint64_t(INT64_MAX) + negative) return false;
        v = negative ? std::int64_t(0 - x) : std::int64_t(x);
        p = q;
        return true;
    }

    [[gnu::always_inline]] bool ip(const char*& p, const char* e, EndpointId& id) {
        std::uint32_t v4 = 0;
        const char* q = parseV4(p, e, v4);
        if (q && (q == e || *q == ',')) {
            id = m_v4.get(v4, m_table.endpoints);
            p = q;
            return true;
        }
        const char* c = static_cast<const char*>(std::memchr(p, ',', std::size_t(e - p)));
        if (!c) c = e;
        auto addr = IpAddr::parse(std::string_view(p, std::size_t(c - p)));
        if (!addr) return false;
        id = m_table.endpoints.intern(*addr);
        p = c;
        return true;
    }

    // The header this project writes (start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets): its rows
    // by canonicalRow.
    bool canonicalHeader() const {
        static constexpr Col kOrder[] = {Col::StartNs, Col::EndNs, Col::SrcIp, Col::DstIp,  Col::SrcPort,
                                         Col::DstPort, Col::Proto, Col::Bytes, Col::Packets};
        return !m_congestion && std::equal(m_cols.begin(), m_cols.end(), std::begin(kOrder), std::end(kOrder));
    }

    // A time stamp as num reads it, the value of its first 8 digits taken from the last stamp's where they are the
    // same bytes: a row's start and end, and the rows' starts, share their leading digits (readFlowsCsv of `large`
    // 0.322 -> 0.305 s, its CPU 37 ms less, medians of 21 loads).
    [[gnu::always_inline]] bool stamp(const char*& p, std::int64_t& v) {
        const std::uint64_t head = load8(p);
        if (head != m_stampHead) {
            if (leadingDigits(head) != 8) return num(p, v); // shorter, signed or not a number: as ever
            m_stampHead = head;
            m_stampHeadValue = digitsValue(head, 8);
        }
        std::uint64_t x = m_stampHeadValue;
        const char* q = parseU64After8(p + 8, x); // the rest as parseU64 reads it
        if (!q || x > std::uint64_t(INT64_MAX)) return false;
        v = std::int64_t(x);
        p = q;
        return true;
    }

    struct Fields {
        std::int64_t start = 0, end = 0;
        EndpointId s = 0, d = 0;
        std::uint16_t sport = 0, dport = 0;
        std::uint8_t proto = 0;
        std::uint64_t bytes = 0, packets = 0;
    };
    // The fields of a row under the canonical header, from p on (e: where the line ends, or a bound past it).
    [[gnu::always_inline]] bool canonicalFields(const char*& p, const char* e, Fields& f) {
        // The byte at the line end is never ',' (it is '\r', '\n' or the zeroed padding).
        auto comma = [&] { return *p++ == ','; };
        return stamp(p, f.start) && comma() && stamp(p, f.end) && comma() && ip(p, e, f.s) && comma() &&
               ip(p, e, f.d) && comma() && num(p, f.sport) && comma() && num(p, f.dport) && comma() &&
               num(p, f.proto) && comma() && num(p, f.bytes) && comma() && num(p, f.packets);
    }

    // fastRow for the canonical header: the fields in their order, inline, without a column's dispatch (`analyze
    // large`: CPU 1.64 -> 1.595 s, 1.09 -> 1.075 s, medians of 10 alternated). The same rows accepted, to the same
    // values; the rest go to slowRow as from fastRow.
    [[gnu::always_inline]] bool canonicalRow(const char* p, const char* e) {
        Fields f;
        if (!canonicalFields(p, e, f) || p != e || f.end < f.start) return false;
        m_table.append(f.start, f.end, f.s, f.d, f.sport, f.dport, f.proto, f.bytes, f.packets);
        return true;
    }

    // canonicalRow for a line whose end is not looked for first: its fields read from p, then its end ('\n' or
    // "\r\n", before `end`, the data's). The position after the line, or nullptr: the line then goes the usual way
    // (its end found first; a comment, a blank line, a row cut off at the data's end or not well formed). Finding
    // each line's end first took 2.4% of `analyze large`.
    [[gnu::always_inline]] const char* canonicalLine(const char* p, const char* end) {
        Fields f;
        if (!canonicalFields(p, end, f)) return nullptr;
        // (Past `end` is the zeroed padding: a '\n' or "\r\n" found is the data's.)
        const char* next = *p == '\n' ? p + 1 : *p == '\r' && p[1] == '\n' ? p + 2 : nullptr;
        if (!next || f.end < f.start) return nullptr;
        m_table.append(f.start, f.end, f.s, f.d, f.sport, f.dport, f.proto, f.bytes, f.packets);
        return next;
    }

    // Well-formed rows only; false sends the row to slowRow, which decides and explains.
    bool fastRow(const char* p, const char* e) {
        std::int64_t start = 0, end = 0;
        EndpointId s = 0, d = 0;
        std::uint16_t sport = 0, dport = 0;
        std::uint8_t proto = 0;
        std::uint64_t bytes = 0, packets = 0;
        std::uint32_t retransmits = 0, cnps = 0, ecnCe = 0;
        const std::size_t n = m_cols.size();
        for (std::size_t f = 0; f < n; ++f) {
            bool ok = true;
            switch (m_cols[f]) {
            case Col::StartNs:
                ok = num(p, start);
                break;
            case Col::EndNs:
                ok = num(p, end);
                break;
            case Col::SrcIp:
                ok = ip(p, e, s);
                break;
            case Col::DstIp:
                ok = ip(p, e, d);
                break;
            case Col::SrcPort:
                ok = num(p, sport);
                break;
            case Col::DstPort:
                ok = num(p, dport);
                break;
            case Col::Proto:
                ok = num(p, proto);
                break;
            case Col::Bytes:
                ok = num(p, bytes);
                break;
            case Col::Packets:
                ok = num(p, packets);
                break;
            case Col::Retransmits:
                ok = num(p, retransmits);
                break;
            case Col::Cnps:
                ok = num(p, cnps);
                break;
            case Col::EcnCe:
                ok = num(p, ecnCe);
                break;
            case Col::Ignore: {
                const char* c = static_cast<const char*>(std::memchr(p, ',', std::size_t(e - p)));
                p = c ? c : e;
                break;
            }
            }
            if (!ok) return false;
            if (f + 1 < n) {
                if (p == e || *p != ',') return false;
                ++p;
            }
        }
        if (p != e || end < start) return false;
        if (m_congestion)
            m_table.append(start, end, s, d, sport, dport, proto, bytes, packets, retransmits, cnps, ecnCe);
        else
            m_table.append(start, end, s, d, sport, dport, proto, bytes, packets);
        return true;
    }

    template <typename Message> void rowError(std::uint32_t column, Message&& message) {
        skipRow(m_diag, m_options.strict, m_path, m_line, column, message);
    }

    // Reads one field of the row for slowRow; on a problem reports it and returns false.
    template <typename T>
    bool unsignedField(std::string_view v, std::uint32_t column, Col col, std::uint64_t max, T& out) {
        std::uint64_t x = 0;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        bool digits = !v.empty() && ptr == v.data() + v.size();
        std::string name(columnName(col));
        if (digits && ec == std::errc{} && x <= max) {
            out = T(x);
            return true;
        }
        if (digits && (ec == std::errc::result_out_of_range || x > max))
            rowError(column, [&] {
                return name + " " + std::string(v.size() > 40 ? quoted(v) : std::string(v)) + " out of range 0.." +
                       std::to_string(max);
            });
        else if (max == UINT64_MAX)
            rowError(column, [&] { return name + " " + quoted(v) + ": expected a non-negative integer"; });
        else
            rowError(column,
                     [&] { return name + " " + quoted(v) + ": expected an integer 0.." + std::to_string(max); });
        return false;
    }

    void slowRow(const char* p, const char* e) {
        std::string_view line(p, std::size_t(e - p));
        std::string_view trimmed = trimField(line);
        if (trimmed.empty() || trimmed.front() == '#') return; // blank or indented comment
        auto split = rowFields(line, m_cols.size(), [&](std::uint32_t c, auto&& m) { rowError(c, m); });
        if (!split) return;
        const std::vector<std::string_view>& fields = *split;
        FlowRecord r;
        std::uint32_t congestion[3] = {0, 0, 0}; // retransmits, cnps, ecn_ce
        std::uint32_t endColumn = 0;
        for (std::size_t f = 0; f < fields.size(); ++f) {
            Col col = m_cols[f];
            if (col == Col::Ignore) continue;
            std::string_view v = trimField(fields[f]);
            auto column = std::uint32_t(f + 1);
            std::string name(columnName(col));
            switch (col) {
            case Col::StartNs:
            case Col::EndNs: {
                std::int64_t t = 0;
                auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), t);
                if (v.empty() || ptr != v.data() + v.size() || ec != std::errc{}) {
                    const bool outOfRange = ec == std::errc::result_out_of_range && ptr == v.data() + v.size();
                    rowError(column, [&] {
                        return name + " " + quoted(v) +
                               (outOfRange ? ": out of range for a 64-bit nanosecond time"
                                           : ": expected an integer (nanoseconds)");
                    });
                    return;
                }
                (col == Col::StartNs ? r.startNs : r.endNs) = t;
                if (col == Col::EndNs) endColumn = column;
                break;
            }
            case Col::SrcIp:
            case Col::DstIp: {
                auto addr = IpAddr::parse(v);
                if (!addr) {
                    rowError(column, [&] { return name + " " + quoted(v) + " is not an IPv4 or IPv6 address"; });
                    return;
                }
                (col == Col::SrcIp ? r.src : r.dst) = *addr;
                break;
            }
            case Col::SrcPort:
                if (!unsignedField(v, column, col, 65535, r.srcPort)) return;
                break;
            case Col::DstPort:
                if (!unsignedField(v, column, col, 65535, r.dstPort)) return;
                break;
            case Col::Proto:
                if (!unsignedField(v, column, col, 255, r.proto)) return;
                break;
            case Col::Bytes:
                if (!unsignedField(v, column, col, UINT64_MAX, r.bytes)) return;
                break;
            case Col::Packets:
                if (v.empty()) break; // optional: an empty cell is 0
                if (!unsignedField(v, column, col, UINT64_MAX, r.packets)) return;
                break;
            case Col::Retransmits:
            case Col::Cnps:
            case Col::EcnCe: {
                if (v.empty()) break; // optional: an empty cell is 0
                std::uint32_t& count = congestion[col == Col::Retransmits ? 0 : col == Col::Cnps ? 1 : 2];
                if (!unsignedField(v, column, col, UINT32_MAX, count)) return;
                break;
            }
            case Col::Ignore:
                break;
            }
        }
        if (r.endNs < r.startNs) {
            rowError(endColumn, [&] {
                return "end_ns " + std::to_string(r.endNs) + " is before start_ns " + std::to_string(r.startNs);
            });
            return;
        }
        m_table.append(r);
        if (m_congestion) {
            m_table.retransmits.back() = congestion[0];
            m_table.cnps.back() = congestion[1];
            m_table.ecnCe.back() = congestion[2];
        }
    }

    // Keeps one reservation ahead of the rows, projected from the bytes per row seen so far, so the
    // columns are not doubled (and copied) as they grow.
    void reserveFor(std::size_t pendingBytes, double fraction) {
        std::size_t rows = m_table.size();
        std::size_t capacity = m_table.startNs.capacity();
        const std::uint64_t parsed = m_bytesSeen - m_bytesFrom;
        if (rows < 1000 || parsed == 0) return; // too few rows to project; the first chunk grows as it goes
        double bytesPerRow = double(parsed) / double(rows);
        auto need = std::size_t(double(rows) + double(pendingBytes) / bytesPerRow * 1.1) + 1024;
        if (need <= capacity) return;
        std::size_t target = std::max(need, capacity + capacity / 2);
        if (fraction > 0.0) {
            // `fraction` counts the pending chunk too: total bytes ~ (parsed + pending) / fraction.
            double totalBytes = double(parsed + pendingBytes) / fraction;
            target = std::max(need, std::size_t(totalBytes / bytesPerRow * 1.02) + 1024);
        }
        m_table.reserve(target);
    }

    const std::string& m_path;
    const LoadOptions& m_options;
    LoadDiagnostics& m_diag;
    FlowTable m_table;
    V4Cache m_v4;
    std::uint64_t m_stampHead = ~std::uint64_t(0); // the last stamp's first 8 bytes (8 digits), for stamp()
    std::uint64_t m_stampHeadValue = 0;
    std::vector<Col> m_cols;
    std::uint64_t m_line = 0;
    std::uint64_t m_bytesSeen = 0; // offset of the next (decompressed) byte to parse: the next chunk mark's
    std::uint64_t m_bytesFrom = 0; // offset where this reader began (a part's, a range's): bytes parsed since, per row
    bool m_header = false;
    bool m_congestion = false; // the header has retransmits, cnps or ecn_ce
    bool m_atStart = true;
    bool m_skipping = false;
    std::function<bool(double)> m_progress; // false cancels
    std::atomic<bool>* m_cancel = nullptr;  // parallel parts: set when one part cancels, seen by the others
    const BatchFn* m_batch = nullptr;       // streaming (streamTo)
    std::size_t m_batchRecords = 0;
    std::vector<CsvChunkMark> m_marks; // streaming: the chunks of the rows of the batch being read
    bool m_markChunks = false;         // keep m_marks (streaming, and the parts of a parallel stream)
    bool m_headerOnly = false;         // a range's header pass: stop after the header line
};

} // namespace

FlowTable readFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag) {
    CsvReader reader(path, options, diag);
    return reader.run();
}

void streamFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                    std::size_t batchRecords, const std::function<void(const FlowTable&)>& batch) {
    streamFlowsCsv(path, options, diag, batchRecords, [&](const FlowTable& t, const std::vector<CsvChunkMark>&) {
        if (!t.empty()) batch(t);
    });
}

void streamFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                    std::size_t batchRecords,
                    const std::function<void(const FlowTable&, const std::vector<CsvChunkMark>&)>& batch,
                    const CsvByteRange* range) {
    CsvReader reader(path, options, diag);
    reader.streamTo(batchRecords, batch);
    reader.run(range);
}

} // namespace prism
