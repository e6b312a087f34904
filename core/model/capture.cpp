// summarize() and unknownRoceEndpoints(): the numbers of a capture shown before any analysis.
#include "model/capture.h"

#include "model/flow_store.h"
#include "util/parallel.h"

#include <algorithm>

namespace prism {

std::vector<UnknownEndpoint> unknownRoceEndpoints(const FlowTable& flows, const Topology& topology) {
    // The records in parts side by side, each counting into its own counts (at least 65536 records a part).
    const std::size_t n = flows.size(), parts = partsFor(n, 0, 65536);
    std::vector<std::vector<std::uint64_t>> counts(parts, std::vector<std::uint64_t>(flows.endpoints.size(), 0));
    parallelFor(parts, unsigned(parts), [&](std::size_t k, unsigned) {
        std::vector<std::uint64_t>& c = counts[k];
        for (std::size_t i = n * k / parts, hi = n * (k + 1) / parts; i < hi; ++i) {
            if (!flows.isRoce(i)) continue;
            ++c[flows.src[i]];
            if (flows.dst[i] != flows.src[i]) ++c[flows.dst[i]];
        }
    });
    std::vector<std::uint64_t>& count = counts[0];
    for (std::size_t k = 1; k < parts; ++k)
        for (EndpointId id = 0; id < count.size(); ++id) count[id] += counts[k][id];
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
    std::vector<bool> roce; // per endpoint: in a RoCE record
    const StoreOverview o = TableStore(f, capture.source).overview(roce);
    s.records = o.records;
    s.roceRecords = o.roceRecords;
    s.roceBytes = o.roceBytes;
    s.otherRecords = o.otherRecords;
    s.otherBytes = o.otherBytes;
    s.endpoints = o.endpoints; // in a record read (a rejected row may have interned one)
    s.firstNs = o.firstNs;     // scanned, not taken from the ends: a table built by hand need not be sorted
    s.lastNs = o.lastNs;
    s.roceEndpoints = std::uint64_t(std::count(roce.begin(), roce.end(), true));
    s.topologyGiven = capture.hasTopology;
    if (capture.hasTopology) {
        s.hosts = capture.topology.hosts.size();
        s.nics = capture.topology.nics.size();
        // (unknownRoceEndpoints(...).size(): the RoCE endpoints the topology does not know)
        for (EndpointId e = 0; e < roce.size(); ++e)
            s.unknownRoceEndpoints += roce[e] && !capture.topology.nicByIp(f.endpoints.at(e));
    } else {
        // Without a topology each RoCE endpoint is a NIC and its own host (the warning says so).
        s.nics = s.hosts = s.roceEndpoints;
    }
    noteDiagnostics(s, capture.diagnostics);
    return s;
}

void noteDiagnostics(CaptureSummary& s, const LoadDiagnostics& d) {
    s.skippedRows = d.skippedRows;
    s.warnings = d.warningCount;
    for (const InputIssue& e : d.errors) s.messages.push_back("error: " + e.toString());
    if (d.skippedRows > d.errors.size())
        s.messages.push_back("error: … and " + std::to_string(d.skippedRows - d.errors.size()) + " more rows skipped");
    for (const InputIssue& w : d.warnings) s.messages.push_back("warning: " + w.toString());
    if (d.warningCount > d.warnings.size())
        s.messages.push_back("warning: … and " + std::to_string(d.warningCount - d.warnings.size()) +
                             " more warnings");
}

std::string topologyMisfit(const CaptureSummary& s) {
    const std::string leads = "their hosts are unknown, so each NIC counts as its own host: TP inside a host cannot be "
                              "seen, and a job's rails come out as separate jobs. Give the cluster's topology "
                              "(--topology FILE, or a topology.json beside the flows)";
    if (s.roceEndpoints == 0) return {};
    if (!s.topologyGiven) return "No topology for the " + std::to_string(s.roceEndpoints) + " RoCE endpoints: " + leads;
    if (2 * s.unknownRoceEndpoints <= s.roceEndpoints) return {};
    return std::to_string(s.unknownRoceEndpoints) + " of the " + std::to_string(s.roceEndpoints) +
           " RoCE endpoints are not NICs of the topology (another cluster's?): " + leads;
}

} // namespace prism
