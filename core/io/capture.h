#pragma once
// Loading a capture: flows.csv[.gz] + topology.json, from a folder or the files named directly.
#include "model/diagnostics.h"
#include "model/flow_table.h"
#include "model/report.h"
#include "model/topology.h"

#include <functional>
#include <string>

namespace prism {

struct LoadOptions {
    bool strict = false; // stop at the first bad row (InputError) instead of skipping it
    // Called now and then with a fraction in [0,1]; return false to cancel (the load throws Cancelled).
    std::function<bool(double)> progress;
};

struct Capture {
    std::string source;       // what the user named (folder or file)
    std::string flowsPath;    // resolved flows.csv or flows.csv.gz
    std::string topologyPath; // resolved topology.json; empty when there is none
    FlowTable flows;          // sorted by start time
    Topology topology;
    bool hasTopology = false;
    LoadDiagnostics diagnostics;
};

// flows.csv reader (DESIGN.md): header row with columns found by name, extra columns ignored, '#' comments,
// CRLF, gzip (by magic bytes, any file name), rows in any order (the table comes back sorted by start).
// Strict: throws InputError at the first bad row. Lenient: skips it and records it in `diag`.
// Fatal in both modes (InputError): missing/unreadable file, missing required column, binary garbage header.
FlowTable readFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag);

// topology.json reader; throws InputError (file, line, column, what was expected) on any problem,
// including a duplicate NIC ip, a NIC without ip, or a NIC on an unknown host.
Topology readTopologyJson(const std::string& path);
void writeTopologyJson(const Topology& topology, const std::string& path);

// Resolves `pathOrFolder` (a folder holding flows.csv[.gz] and topology.json, or either file) and loads
// both. RoCE endpoints missing from the topology become warnings in the diagnostics (never guessed).
// Without topology.json a warning says each NIC is treated as its own host.
Capture loadCapture(const std::string& pathOrFolder, const LoadOptions& options = {});

CaptureSummary summarize(const Capture& capture);

} // namespace prism
