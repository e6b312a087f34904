#pragma once
// What a file holds, told by its content (magic bytes, header line), never by its name: our flows.csv, a
// collector CSV (nfdump, pmacct), a packet capture (pcap, pcapng), an IPFIX file, a topology.json, or none of
// these. And the one entry point that reads flow data of any kind. docs/FORMATS.md "What a capture is".
#include "io/capture.h"

#include <string>
#include <utility>
#include <vector>

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

struct FlowFile {
    std::string path;
    SourceInfo info;
};

// The files a capture is made of, found as loadCapture finds them (io/capture.h): only the first bytes of each
// are read. Throws InputError as loadCapture does for a missing source or one with no flow data.
struct CaptureFiles {
    std::string source;             // the sources joined by " + "
    std::vector<FlowFile> files;    // flow data, in the order loadCapture reads them
    std::string topologyPath;       // --topology, else the one found; empty when none
    LoadDiagnostics diagnostics;    // what finding them met (files skipped with a warning)
};
CaptureFiles findCaptureFiles(const std::vector<std::string>& sources, const LoadOptions& options);

// The warnings loadCapture gives about a topology: switches not listed, and RoCE endpoints (with their record
// counts, most first) that are not NICs of it.
void checkTopologyOf(const Topology& topology, const std::string& topologyPath,
                     const std::vector<std::pair<IpAddr, std::uint64_t>>& unknownRoce, LoadDiagnostics& diag);

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
