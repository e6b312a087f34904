#pragma once
// Flow collectors' CSV output, read by header name: nfdump `-o csv` (1.6 and 1.7.0-1.7.4: ts,te,td,sa,da,...
// with whole-second stamps; 1.7.5+: firstSeen,lastSeen,duration,srcAddr,... with milliseconds), nfdump
// `-o csv-fast` (epoch milliseconds) and pmacct's print plugin (SRC_IP,DST_IP,...,TIMESTAMP_START,...).
// Local-time stamps are read in a TimeZone (UTC unless told). docs/FORMATS.md "Collector CSV".
#include "io/capture.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

enum class CollectorCsvKind { NfdumpLegacy, Nfdump, NfdumpFast, Pmacct };

// "nfdump csv (1.6, 1.7.0-1.7.4)", "nfdump csv (1.7.5+)", "nfdump csv-fast", "pmacct csv".
const char* describe(CollectorCsvKind kind);

// Which collector wrote a CSV, from its header line; nullopt for anything else (our flows.csv included).
std::optional<CollectorCsvKind> collectorCsvKindOfHeader(std::string_view headerLine);

// The zone local wall-clock stamps are read in: UTC, a fixed offset ("+02:00", "-0530", "UTC+2") or an IANA
// name ("Europe/Berlin") looked up in the C library's time zone database (TZDIR or /usr/share/zoneinfo).
class TimeZone {
public:
    TimeZone() = default; // UTC
    // Throws std::invalid_argument naming what was expected when `spec` is none of the above.
    static TimeZone parse(const std::string& spec);
    // UTC seconds of a local wall-clock time given as seconds since 1970-01-01 00:00 of that wall clock.
    // A time in a daylight-saving gap or overlap is resolved as the C library's mktime does.
    std::int64_t toUtc(std::int64_t localSeconds) const;
    // "UTC", "UTC+02:00", "Europe/Berlin"
    const std::string& name() const { return m_name; }

private:
    std::string m_name = "UTC";
    std::string m_iana;        // empty: fixed offset
    std::int64_t m_offset = 0; // seconds east of UTC (fixed offsets)
    mutable std::map<std::int64_t, std::int64_t> m_hourOffset; // IANA: local hour -> offset, cached
};

// A point in time as a user writes it: nanoseconds since the epoch ("1704164645123000000"), or a UTC date and time
// "2024-01-02 03:04:05[.123]" ('T' for the space, a trailing 'Z' allowed). nullopt for anything else.
std::optional<std::int64_t> parseUtcTime(std::string_view text);

struct CollectorCsvInfo {
    CollectorCsvKind kind = CollectorCsvKind::NfdumpLegacy;
    bool localTimes = false; // some stamps were local wall-clock times, read in the time zone
    std::string timeZone;    // the zone's name
};

// Reads a collector CSV (plain or gzip; comments '#', blank lines and nfdump's "Summary" trailer ignored).
// Rows the reader cannot use are skipped with file:line:column messages in `diag` (strict: InputError at
// the first). Fatal (InputError): unreadable file, a header of no known collector, a required column missing.
// Local stamps are read in `options.timeZone` (see TimeZone::parse; an invalid zone is an InputError).
// Whole-second stamps (nfdump before 1.7.5) keep the duration's milliseconds: end = start + td.
FlowTable readCollectorCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                           CollectorCsvInfo* info = nullptr);

} // namespace prism
