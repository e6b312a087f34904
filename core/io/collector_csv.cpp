// Collector CSV reader (nfdump csv / csv-fast, pmacct print plugin): columns found by header name, one
// forgiving parse per row (these files are small next to flows.csv, so no fast path), time stamps in any of
// the collectors' forms. Shares the byte source and field helpers of the flows.csv reader (text_input.h).
#include "io/collector_csv.h"

#include "io/text_input.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace prism {
namespace {

constexpr std::int64_t kNsPerSec = 1'000'000'000;
constexpr std::int64_t kMaxSeconds = INT64_MAX / kNsPerSec - 1; // times in ns since 1970 fit in int64

enum class Role : std::uint8_t { Ignore, Start, End, Duration, Src, Dst, SrcPort, DstPort, Proto, Packets, Bytes };

// Header names (lower case) of each role, in every collector's spelling. nfdump 1.6-1.7.4: ts te td sa da sp
// dp pr ipkt ibyt; nfdump 1.7.5+ and csv-fast: firstSeen lastSeen duration srcAddr dstAddr srcPort dstPort
// proto inPackets/packets inBytes/bytes; pmacct: TIMESTAMP_START TIMESTAMP_END SRC_IP DST_IP SRC_PORT DST_PORT
// PROTOCOL PACKETS BYTES.
struct RoleNames {
    Role role;
    const char* label; // for messages
    std::initializer_list<std::string_view> names;
    bool required;
};

const RoleNames kRoles[] = {
    {Role::Start, "start time", {"ts", "firstseen", "timestamp_start"}, true},
    {Role::End, "end time", {"te", "lastseen", "timestamp_end"}, false},
    {Role::Duration, "duration", {"td", "duration"}, false},
    {Role::Src, "source address", {"sa", "srcaddr", "src_ip"}, true},
    {Role::Dst, "destination address", {"da", "dstaddr", "dst_ip"}, true},
    {Role::SrcPort, "source port", {"sp", "srcport", "src_port"}, true},
    {Role::DstPort, "destination port", {"dp", "dstport", "dst_port"}, true},
    {Role::Proto, "protocol", {"pr", "proto", "protocol"}, true},
    {Role::Packets, "packets", {"ipkt", "inpackets", "packets", "pkt"}, false},
    {Role::Bytes, "bytes", {"ibyt", "inbytes", "bytes", "byt"}, true},
};

bool has(const std::vector<std::string>& names, std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}

bool digitsAt(std::string_view s, std::size_t pos, std::size_t n, unsigned& out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + unsigned(s[i] - '0');
    }
    return true;
}

// Decimal fraction digits (after the '.') to nanoseconds; at most 9 digits.
bool fractionNs(std::string_view f, std::int64_t& ns) {
    if (f.empty() || f.size() > 9) return false;
    std::int64_t v = 0;
    for (char c : f) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    for (std::size_t i = f.size(); i < 9; ++i) v *= 10;
    ns = v;
    return true;
}

// "YYYY-MM-DD hh:mm:ss[.fraction]" (or with 'T') as wall-clock seconds since 1970 and the fraction in ns.
bool parseDateTime(std::string_view s, std::int64_t& wallSeconds, std::int64_t& fracNs) {
    unsigned y, mo, d, h, mi, se;
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
        s[16] != ':')
        return false;
    if (!digitsAt(s, 0, 4, y) || !digitsAt(s, 5, 2, mo) || !digitsAt(s, 8, 2, d) || !digitsAt(s, 11, 2, h) ||
        !digitsAt(s, 14, 2, mi) || !digitsAt(s, 17, 2, se))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
    fracNs = 0;
    if (s.size() > 19) {
        if (s[19] != '.' || !fractionNs(s.substr(20), fracNs)) return false;
    }
    wallSeconds = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return true;
}

// The zone an RFC 3339 time ends with ("Z", "+01:00", "-0530"; pmacct's timestamps_rfc3339): its offset east of
// UTC in seconds, and `s` without it; nullopt (s as it was) when there is none.
std::optional<std::int64_t> zoneSuffix(std::string_view& s) {
    if (s.size() > 19 && (s.back() == 'Z' || s.back() == 'z')) {
        s.remove_suffix(1);
        return 0;
    }
    const std::size_t k = s.find_last_of("+-");
    if (k == std::string_view::npos || k < 19) return std::nullopt;
    const std::string_view z = s.substr(k + 1);
    unsigned hh = 0, mm = 0;
    const bool colon = z.size() == 5 && z[2] == ':' && digitsAt(z, 0, 2, hh) && digitsAt(z, 3, 2, mm);
    const bool plain = z.size() == 4 && digitsAt(z, 0, 2, hh) && digitsAt(z, 2, 2, mm);
    if (!(colon || plain) || hh > 23 || mm > 59) return std::nullopt;
    const std::int64_t offset = (s[k] == '-' ? -1 : 1) * std::int64_t(hh * 3600 + mm * 60);
    s = s.substr(0, k);
    return offset;
}

// "1704164645" or "1704164645.123456": seconds since the epoch, UTC.
bool parseEpochSeconds(std::string_view s, std::int64_t& ns) {
    std::size_t dot = s.find('.');
    std::string_view whole = s.substr(0, dot);
    std::int64_t sec = 0, frac = 0;
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), sec);
    if (whole.empty() || ec != std::errc{} || p != whole.data() + whole.size() || sec < 0) return false;
    if (dot != std::string_view::npos && !fractionNs(s.substr(dot + 1), frac)) return false;
    if (sec > kMaxSeconds) return false;
    ns = sec * kNsPerSec + frac;
    return true;
}

// Protocol names as nfdump (TCP, UDP, ICMP6...) and pmacct (tcp, udp, ipv6-icmp...) print them.
std::optional<std::uint8_t> protocolByName(std::string_view name) {
    static const std::pair<std::string_view, std::uint8_t> kNames[] = {
        {"icmp", 1},  {"igmp", 2}, {"ipip", 4}, {"tcp", 6},    {"udp", 17},        {"ipv6", 41},       {"rsvp", 46},
        {"gre", 47},  {"esp", 50}, {"ah", 51},  {"icmp6", 58}, {"ipv6-icmp", 58},  {"icmpv6", 58},     {"ospf", 89},
        {"pim", 103}, {"vrrp", 112}, {"l2tp", 115}, {"sctp", 132}, {"udplite", 136}, {"udp-lite", 136}};
    std::string n = lowerAscii(name);
    for (const auto& [text, number] : kNames)
        if (n == text) return number;
    return std::nullopt;
}

class Reader {
public:
    Reader(const std::string& path, const LoadOptions& options, const TimeZone& zone, LoadDiagnostics& diag)
        : m_path(path), m_options(options), m_zone(zone), m_diag(diag) {}

    FlowTable run(CollectorCsvInfo* info) {
        ByteSource src(m_path, "a collector CSV file");
        constexpr std::size_t kChunk = std::size_t(1) << 20;
        std::string buf;
        const std::size_t chunkSize = readBufferSize(src.sizeHint(), kChunk);
        std::unique_ptr<char[]> chunk(new char[chunkSize]);
        bool atStart = true;
        for (;;) {
            std::size_t n = src.read(chunk.get(), chunkSize);
            if (m_options.progress && !m_options.progress(std::max(0.0, src.fraction()))) throw Cancelled();
            bool eof = n == 0;
            buf.append(chunk.get(), n);
            if (atStart && (buf.size() >= 3 || eof)) {
                if (buf.compare(0, 3, "\xEF\xBB\xBF") == 0) buf.erase(0, 3);
                atStart = false;
            }
            std::size_t pos = 0;
            for (;;) {
                std::size_t nl = buf.find('\n', pos);
                if (nl == std::string::npos) break;
                line(std::string_view(buf).substr(pos, nl - pos));
                pos = nl + 1;
            }
            buf.erase(0, pos);
            if (eof) {
                // A line cut by a broken gzip stream is not trusted; a last line without '\n' is.
                if (!buf.empty() && src.streamError().empty()) line(buf);
                break;
            }
            if (buf.size() > kChunk) throw InputError({m_path, m_line + 1, 0, "line longer than 1 MiB: not a CSV file"});
        }
        if (!src.streamError().empty()) {
            InputIssue issue{m_path, m_line + 1, 0,
                             src.streamError() + "; rows before line " + std::to_string(m_line + 1) + " were kept"};
            if (m_options.strict) throw InputError(issue);
            m_diag.addError(std::move(issue));
        }
        if (m_cols.empty()) throw InputError({m_path, 0, 0, "no header row: the file is empty"});
        if (info) {
            info->kind = m_kind;
            info->localTimes = m_localTimes;
            info->timeZone = m_zone.name();
        }
        m_table.sortByStart();
        return std::move(m_table);
    }

private:
    void line(std::string_view l) {
        ++m_line;
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        std::string_view t = trimField(l);
        if (t.empty() || t.front() == '#' || m_trailer) return;
        if (m_cols.empty()) {
            header(l);
            return;
        }
        if (t == "Summary") { // nfdump's trailer: totals, not flows
            m_trailer = true;
            return;
        }
        if (t == "No matching flows") return; // nfdump on an empty selection
        row(l);
    }

    void header(std::string_view l) {
        if (findBinary(l.data(), l.data() + l.size())) throw InputError({m_path, m_line, 0, "binary data: not a CSV file"});
        auto kind = collectorCsvKindOfHeader(l);
        if (!kind)
            throw InputError({m_path, m_line, 0,
                              "header " + quoted(l) +
                                  " is not one of nfdump -o csv, nfdump -o csv-fast or pmacct's print plugin CSV"});
        m_kind = *kind;
        auto names = headerNames(l);
        m_cols.assign(names.size(), Role::Ignore);
        std::string missing;
        for (const RoleNames& r : kRoles) {
            // The first spelling present wins (nfdump 1.7.5 may print both inPackets and packets).
            int found = -1;
            for (std::string_view n : r.names)
                for (std::size_t i = 0; i < names.size() && found < 0; ++i)
                    if (names[i] == n && m_cols[i] == Role::Ignore) found = int(i);
            if (found >= 0)
                m_cols[std::size_t(found)] = r.role;
            else if (r.required)
                missing += (missing.empty() ? "" : ", ") + std::string(r.label) + " (" +
                           std::string(*r.names.begin()) + "/" + std::string(*(r.names.begin() + 1)) + "/" +
                           std::string(*(r.names.begin() + 2)) + ")";
            if (found >= 0 && r.role == Role::End) m_hasEnd = true;
        }
        if (!missing.empty()) {
            std::string hint = m_kind == CollectorCsvKind::Pmacct
                                   ? " (add them to the print plugin's aggregate: src_host, dst_host, src_port, "
                                     "dst_port, proto, timestamp_start, timestamp_end)"
                                   : "";
            throw InputError({m_path, m_line, 0,
                              std::string(describe(m_kind)) + " header lacks required column(s) " + missing + hint});
        }
    }

    template <typename Message> void rowError(std::uint32_t column, Message&& message) {
        skipRow(m_diag, m_options.strict, m_path, m_line, column, message);
    }

    // A time stamp in ns since the epoch (UTC): epoch milliseconds (csv-fast), epoch seconds with a fraction
    // (pmacct timestamps_since_epoch, nfdump %tsr) or a local date and time read in the zone.
    bool time(std::string_view v, std::uint32_t column, const char* what, std::int64_t& ns) {
        if (m_kind == CollectorCsvKind::NfdumpFast) {
            std::int64_t ms = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
            if (!v.empty() && ec == std::errc{} && p == v.data() + v.size() && ms >= 0 && ms < INT64_MAX / 1'000'000) {
                ns = ms * 1'000'000;
                return true;
            }
            rowError(column, [&] {
                return std::string(what) + " " + quoted(v) + ": expected milliseconds since 1970 (csv-fast)";
            });
            return false;
        }
        if (parseEpochSeconds(v, ns)) return true;
        std::int64_t wall = 0, frac = 0;
        if (v.substr(0, 10) == "0000-00-00") {
            rowError(column,
                     [&] { return std::string(what) + " " + quoted(v) + ": the collector had no time for this flow"; });
            return false;
        }
        std::string_view local = v;
        const std::optional<std::int64_t> offset = zoneSuffix(local); // a time that says its zone is not local
        if (!parseDateTime(local, wall, frac)) {
            rowError(column, [&] {
                return std::string(what) + " " + quoted(v) +
                       ": expected a date and time \"YYYY-MM-DD hh:mm:ss[.fraction]\" (an RFC 3339 zone such as Z "
                       "or +01:00 may follow) or seconds since 1970";
            });
            return false;
        }
        if (!offset) m_localTimes = true;
        std::int64_t utc = offset ? wall - *offset : m_zone.toUtc(wall);
        if (utc < -kMaxSeconds || utc > kMaxSeconds) { // beyond 64-bit nanoseconds (years 1678 to 2261)
            rowError(column,
                     [&] { return std::string(what) + " " + quoted(v) + ": out of range (years 1678 to 2261)"; });
            return false;
        }
        ns = utc * kNsPerSec + frac;
        return true;
    }

    template <typename T> bool number(std::string_view v, std::uint32_t column, const char* what, std::uint64_t max, T& out) {
        std::uint64_t x = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (v.empty() || p != v.data() + v.size() || ec != std::errc{} || x > max) {
            rowError(column, [&] {
                return std::string(what) + " " + quoted(v) +
                       (max == UINT64_MAX ? ": expected a non-negative integer"
                                          : ": expected an integer 0.." + std::to_string(max));
            });
            return false;
        }
        out = T(x);
        return true;
    }

    void row(std::string_view l) {
        auto split = rowFields(l, m_cols.size(), [&](std::uint32_t c, auto&& m) { rowError(c, m); });
        if (!split) return;
        const std::vector<std::string_view>& fields = *split;
        FlowRecord r;
        std::int64_t end = 0, durationNs = -1;
        std::uint32_t endColumn = 0;
        for (std::size_t f = 0; f < fields.size(); ++f) {
            Role role = m_cols[f];
            if (role == Role::Ignore) continue;
            std::string_view v = trimField(fields[f]);
            auto column = std::uint32_t(f + 1);
            switch (role) {
            case Role::Start:
                if (!time(v, column, "start time", r.startNs)) return;
                break;
            case Role::End:
                endColumn = column;
                if (v.substr(0, 10) == "0000-00-00" || v == "0") { // pmacct/nfdump: no end known
                    end = INT64_MIN;
                    break;
                }
                if (!time(v, column, "end time", end)) return;
                break;
            case Role::Duration: {
                std::int64_t ns = 0;
                if (!parseEpochSeconds(v, ns)) {
                    rowError(column, [&] { return "duration " + quoted(v) + ": expected seconds (e.g. 1.250)"; });
                    return;
                }
                durationNs = ns;
                break;
            }
            case Role::Src:
            case Role::Dst: {
                auto addr = IpAddr::parse(v);
                if (!addr) {
                    rowError(column, [&] {
                        return std::string(role == Role::Src ? "source" : "destination") + " address " + quoted(v) +
                               " is not an IPv4 or IPv6 address";
                    });
                    return;
                }
                (role == Role::Src ? r.src : r.dst) = *addr;
                break;
            }
            case Role::SrcPort:
                if (!number(v, column, "source port", 65535, r.srcPort)) return;
                break;
            case Role::DstPort: {
                // nfdump prints ICMP type.code in the destination port: kept as type * 256 + code.
                std::size_t dot = v.find('.');
                if (dot != std::string_view::npos) {
                    std::uint16_t type = 0, code = 0;
                    if (!number(v.substr(0, dot), column, "ICMP type", 255, type) ||
                        !number(v.substr(dot + 1), column, "ICMP code", 255, code))
                        return;
                    r.dstPort = std::uint16_t(type * 256 + code);
                } else if (!number(v, column, "destination port", 65535, r.dstPort)) {
                    return;
                }
                break;
            }
            case Role::Proto:
                if (!v.empty() && v.front() >= '0' && v.front() <= '9') {
                    if (!number(v, column, "protocol", 255, r.proto)) return;
                } else if (auto p = protocolByName(v)) {
                    r.proto = *p;
                } else {
                    rowError(column, [&] {
                        return "protocol " + quoted(v) + ": expected a number 0..255 or a name (TCP, UDP, ICMP...)";
                    });
                    return;
                }
                break;
            case Role::Packets:
                if (!number(v, column, "packets", UINT64_MAX, r.packets)) return;
                break;
            case Role::Bytes:
                if (!number(v, column, "bytes", UINT64_MAX, r.bytes)) return;
                break;
            case Role::Ignore:
                break;
            }
        }
        // The end: nfdump before 1.7.5 prints whole-second stamps but the duration in ms, so start + duration
        // keeps the record's length; otherwise the end stamp, else start + duration, else the start.
        if (durationNs > 0 && r.startNs > INT64_MAX - durationNs) {
            rowError(0, [&] { return std::string("duration runs past the year 2262"); });
            return;
        }
        if (durationNs >= 0 && (m_kind == CollectorCsvKind::NfdumpLegacy || !m_hasEnd || end == INT64_MIN))
            r.endNs = r.startNs + durationNs;
        else if (m_hasEnd && end != INT64_MIN)
            r.endNs = end;
        else
            r.endNs = r.startNs;
        if (r.endNs < r.startNs) {
            rowError(endColumn, [&] {
                return "end time is " + std::to_string((r.startNs - r.endNs) / 1'000'000) + " ms before the start time";
            });
            return;
        }
        // Source before destination, as the flows.csv reader interns them (a converted file reads the same).
        EndpointId s = m_table.endpoints.intern(r.src);
        EndpointId d = m_table.endpoints.intern(r.dst);
        m_table.append(r.startNs, r.endNs, s, d, r.srcPort, r.dstPort, r.proto, r.bytes, r.packets);
    }

    const std::string& m_path;
    const LoadOptions& m_options;
    const TimeZone& m_zone;
    LoadDiagnostics& m_diag;
    FlowTable m_table;
    CollectorCsvKind m_kind = CollectorCsvKind::NfdumpLegacy;
    std::vector<Role> m_cols;
    std::uint64_t m_line = 0;
    bool m_hasEnd = false;
    bool m_trailer = false;
    bool m_localTimes = false;
};

// The C library's zone database is reached through the TZ variable, which is process-wide.
std::mutex& tzMutex() {
    static std::mutex m;
    return m;
}

// "+02:00", "-0530", "+2", "UTC+02:00", "GMT-3": seconds east of UTC; nullopt when not an offset.
std::optional<std::int64_t> parseOffset(std::string_view s) {
    for (std::string_view prefix : {"UTC", "GMT"})
        if (s.substr(0, 3) == prefix && s.size() > 3) s.remove_prefix(3);
    if (s.size() < 2 || (s[0] != '+' && s[0] != '-')) return std::nullopt;
    int sign = s[0] == '-' ? -1 : 1;
    s.remove_prefix(1);
    unsigned h = 0, m = 0;
    if (s.size() == 5 && s[2] == ':' && digitsAt(s, 0, 2, h) && digitsAt(s, 3, 2, m)) {
    } else if (s.size() == 4 && digitsAt(s, 0, 2, h) && digitsAt(s, 2, 2, m)) {
    } else if ((s.size() == 1 || s.size() == 2) && digitsAt(s, 0, s.size(), h)) {
    } else {
        return std::nullopt;
    }
    if (h > 14 || m > 59) return std::nullopt;
    return sign * std::int64_t(h * 3600 + m * 60);
}

} // namespace

const char* describe(CollectorCsvKind kind) {
    switch (kind) {
    case CollectorCsvKind::NfdumpLegacy:
        return "nfdump csv (1.6, 1.7.0-1.7.4)";
    case CollectorCsvKind::Nfdump:
        return "nfdump csv (1.7.5+)";
    case CollectorCsvKind::NfdumpFast:
        return "nfdump csv-fast";
    case CollectorCsvKind::Pmacct:
        return "pmacct csv";
    }
    return "collector csv";
}

std::optional<std::int64_t> parseUtcTime(std::string_view text) {
    text = trimField(text);
    std::int64_t ns = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), ns);
    if (!text.empty() && ec == std::errc{} && p == text.data() + text.size()) return ns;
    const std::int64_t offset = zoneSuffix(text).value_or(0);
    std::int64_t wall = 0, frac = 0;
    if (!parseDateTime(text, wall, frac)) return std::nullopt;
    const std::int64_t utc = wall - offset;
    if (utc < -kMaxSeconds || utc > kMaxSeconds) return std::nullopt; // beyond 64-bit nanoseconds
    return utc * 1'000'000'000 + frac;
}

std::optional<CollectorCsvKind> collectorCsvKindOfHeader(std::string_view headerLine) {
    auto names = headerNames(headerLine);
    if (has(names, "start_ns")) return std::nullopt; // our own flows.csv
    if (has(names, "ts") && has(names, "sa") && has(names, "da")) return CollectorCsvKind::NfdumpLegacy;
    if (has(names, "firstseen") && has(names, "srcaddr"))
        return has(names, "cnt") && has(names, "af") ? CollectorCsvKind::NfdumpFast : CollectorCsvKind::Nfdump;
    if (has(names, "src_ip") && has(names, "dst_ip") && (has(names, "timestamp_start") || has(names, "protocol")))
        return CollectorCsvKind::Pmacct;
    return std::nullopt;
}

TimeZone TimeZone::parse(const std::string& spec) {
    TimeZone z;
    if (spec.empty() || spec == "UTC" || spec == "utc" || spec == "Z" || spec == "GMT") return z;
    if (auto off = parseOffset(spec)) {
        z.m_offset = *off;
        std::int64_t a = *off < 0 ? -*off : *off;
        char text[16];
        std::snprintf(text, sizeof text, "UTC%c%02d:%02d", *off < 0 ? '-' : '+', int(a / 3600), int(a / 60 % 60));
        z.m_name = text;
        return z;
    }
    namespace fs = std::filesystem;
    const char* dir = std::getenv("TZDIR");
    fs::path db = dir && *dir ? dir : "/usr/share/zoneinfo";
    std::error_code ec;
    bool plausible = !spec.empty() && spec.front() != '/' && spec.find("..") == std::string::npos;
    if (!plausible || !fs::is_regular_file(db / spec, ec))
        throw std::invalid_argument("unknown time zone \"" + spec +
                                    "\" (expected UTC, an offset such as +02:00, or an IANA name such as "
                                    "Europe/Berlin found in " +
                                    db.string() + ")");
    z.m_iana = spec;
    z.m_name = spec;
    return z;
}

std::int64_t TimeZone::toUtc(std::int64_t localSeconds) const {
    if (m_iana.empty()) return localSeconds - m_offset;
    // The offset is looked up once per local hour and cached: zones change offset on whole local hours in
    // practice, so the lookups stay few however many stamps a capture holds.
    std::int64_t hour = localSeconds >= 0 ? localSeconds / 3600 : (localSeconds - 3599) / 3600;
    auto it = m_hourOffset.find(hour);
    if (it == m_hourOffset.end()) {
        std::lock_guard<std::mutex> lock(tzMutex());
        const char* old = std::getenv("TZ");
        std::string saved = old ? old : "";
        ::setenv("TZ", m_iana.c_str(), 1);
        ::tzset();
        std::time_t wall = std::time_t(hour * 3600);
        std::tm tm{};
        ::gmtime_r(&wall, &tm); // the wall-clock fields of the local hour
        tm.tm_isdst = -1;
        std::time_t utc = std::mktime(&tm);
        if (old)
            ::setenv("TZ", saved.c_str(), 1);
        else
            ::unsetenv("TZ");
        ::tzset();
        it = m_hourOffset.emplace(hour, std::int64_t(wall) - std::int64_t(utc)).first;
    }
    return localSeconds - it->second;
}

FlowTable readCollectorCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                           CollectorCsvInfo* info) {
    TimeZone zone;
    try {
        zone = TimeZone::parse(options.timeZone);
    } catch (const std::invalid_argument& e) {
        throw InputError({path, 0, 0, e.what()});
    }
    Reader reader(path, options, zone, diag);
    return reader.run(info);
}

} // namespace prism
