#pragma once
// A loaded capture: the flow records, the topology and what loading them met. io/capture.h reads one;
// summarize() gives the numbers shown before any analysis.
#include "model/diagnostics.h"
#include "model/flow_table.h"
#include "model/report.h"
#include "model/topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace prism {

struct Capture {
    std::string source;       // what the user named (folder or file)
    std::string flowsPath;    // the first flow data file (compatibility: the only one before issue 13)
    std::vector<std::string> flowsPaths; // every flow data file read, in the order read
    std::vector<std::string> flowsKinds; // per file, what it was read as: "flows.csv", "nfdump csv (1.7.5+)"...
    std::string topologyPath; // resolved topology.json; empty when there is none
    FlowTable flows;          // sorted by start time
    Topology topology;
    bool hasTopology = false;
    LoadDiagnostics diagnostics;
};

struct UnknownEndpoint {
    EndpointId id;
    std::uint64_t records;
};

// RoCE endpoints that are not NICs of the topology, with how many RoCE records each appears in;
// most records first.
std::vector<UnknownEndpoint> unknownRoceEndpoints(const FlowTable& flows, const Topology& topology);

CaptureSummary summarize(const Capture& capture);

// A summary's skipped rows and warnings from what loading met: the counts, and the first messages with "… and N
// more" where there were more.
void noteDiagnostics(CaptureSummary& s, const LoadDiagnostics& d);

// Where the topology does not fit the capture (none given, or most RoCE endpoints not its NICs), what it leads
// to and the fix, in one sentence; empty where it fits.
std::string topologyMisfit(const CaptureSummary& s);

} // namespace prism
