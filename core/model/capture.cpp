// summarize() and unknownRoceEndpoints(): the numbers of a capture shown before any analysis.
#include "model/capture.h"

#include <algorithm>

namespace prism {

std::vector<UnknownEndpoint> unknownRoceEndpoints(const FlowTable& flows, const Topology& topology) {
    std::vector<std::uint64_t> count(flows.endpoints.size(), 0);
    for (std::size_t i = 0; i < flows.size(); ++i) {
        if (!flows.isRoce(i)) continue;
        ++count[flows.src[i]];
        if (flows.dst[i] != flows.src[i]) ++count[flows.dst[i]];
    }
    std::vector<UnknownEndpoint> out;
    for (EndpointId id = 0; id < count.size(); ++id)
        if (count[id] && !topology.nicByIp(flows.endpoints.at(id))) out.push_back({id, count[id]});
    std::sort(out.begin(), out.end(), [&](const UnknownEndpoint& a, const UnknownEndpoint& b) {
        if (a.records != b.records) return a.records > b.records;
        return flows.endpoints.at(a.id) < flows.endpoints.at(b.id);
    });
    return out;
}

CaptureSummary summarize(const Capture& capture) {
    CaptureSummary s;
    const FlowTable& f = capture.flows;
    s.source = capture.source;
    s.records = f.size();
    std::vector<bool> seen(f.endpoints.size(), false); // in a record read (a rejected row may have interned one)
    for (std::size_t i = 0; i < f.size(); ++i) {
        seen[f.src[i]] = seen[f.dst[i]] = true;
        if (f.isRoce(i)) {
            ++s.roceRecords;
            s.roceBytes += f.bytes[i];
        } else {
            ++s.otherRecords;
            s.otherBytes += f.bytes[i];
        }
    }
    s.endpoints = std::uint64_t(std::count(seen.begin(), seen.end(), true));
    if (capture.hasTopology) {
        s.hosts = capture.topology.hosts.size();
        s.nics = capture.topology.nics.size();
        s.unknownRoceEndpoints = unknownRoceEndpoints(f, capture.topology).size();
    } else {
        // Without a topology each RoCE endpoint is a NIC and its own host (the warning says so).
        std::vector<bool> roce(f.endpoints.size(), false);
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f.isRoce(i)) roce[f.src[i]] = roce[f.dst[i]] = true;
        s.nics = s.hosts = std::uint64_t(std::count(roce.begin(), roce.end(), true));
    }
    if (!f.empty()) {
        // Scanned, not taken from the ends: a table built by hand need not be sorted.
        s.firstNs = *std::min_element(f.startNs.begin(), f.startNs.end());
        s.lastNs = *std::max_element(f.endNs.begin(), f.endNs.end());
    }
    const LoadDiagnostics& d = capture.diagnostics;
    s.skippedRows = d.skippedRows;
    s.warnings = d.warningCount;
    for (const InputIssue& e : d.errors) s.messages.push_back("error: " + e.toString());
    for (const InputIssue& w : d.warnings) s.messages.push_back("warning: " + w.toString());
    return s;
}

} // namespace prism
