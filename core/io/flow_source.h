#pragma once
// What a file holds, told by its content (magic bytes, header line), never by its name: our flows.csv, a
// collector CSV (nfdump, pmacct), a packet capture (pcap, pcapng), an IPFIX file, a topology.json, or none of
// these. And the one entry point that reads flow data of any kind. docs/FORMATS.md "What a capture is".
#include "io/capture.h"

#include <string>

namespace prism {

enum class SourceKind {
    FlowsCsv,     // our flows.csv (start_ns,end_ns,...), plain or gzip
    CollectorCsv, // nfdump -o csv / csv-fast, pmacct print plugin CSV
    Pcap,         // libpcap capture (any of its magic numbers)
    Pcapng,       // pcapng capture
    IpfixFile,    // IPFIX messages back to back (RFC 5655)
    ClickHouse,   // a table on a ClickHouse server: clickhouse://HOST:PORT/DB.TABLE (io/clickhouse.h)
    Topology,     // a JSON object with "hosts"
    Other,        // anything else (a report, a session, a README...): not flow data
};

struct SourceInfo {
    SourceKind kind = SourceKind::Other;
    bool gzip = false;
    std::string what; // "flows.csv", "nfdump csv (1.7.5+)", "pcapng", "topology.json", "JSON (not a topology)"...
    bool isFlowData() const {
        return kind != SourceKind::Topology && kind != SourceKind::Other;
    }
};

// Looks at the first bytes of `path` (inflated when gzip). Throws InputError when it cannot be read.
SourceInfo detectSource(const std::string& path);

// The list of what flow data can be, for messages.
const char* expectedFlowData();

// Reads flow data of any kind (`info` from detectSource) into a table sorted by start. `description` gets
// what was read and how ("nfdump csv (1.6, 1.7.0-1.7.4), local times read as UTC"; for packet captures the
// flow timeouts used). Throws InputError when the file is not flow data or cannot be read.
FlowTable readFlowSource(const std::string& path, const SourceInfo& info, const LoadOptions& options,
                         LoadDiagnostics& diag, std::string* description = nullptr);

} // namespace prism
