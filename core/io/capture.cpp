// loadCapture: resolves a folder or a named file to flows.csv[.gz] + topology.json, loads both and checks
// one against the other. summarize(): the numbers shown before any analysis.
#include "io/capture.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

namespace prism {
namespace {

namespace fs = std::filesystem;

bool isFile(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec) && !fs::is_directory(p, ec);
}

// flows.csv, else flows.csv.gz, in `dir`; empty when neither exists.
std::string flowsIn(const fs::path& dir) {
    for (const char* name : {"flows.csv", "flows.csv.gz"})
        if (isFile(dir / name)) return (dir / name).string();
    return {};
}

struct UnknownEndpoint {
    EndpointId id;
    std::uint64_t records;
};

// RoCE endpoints that are not NICs of the topology, with how many RoCE records each appears in;
// most records first.
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

void checkTopology(Capture& c) {
    const Topology& t = c.topology;
    // One warning per unlisted switch name, not per NIC: a topology without switches[] has thousands.
    std::map<std::string, std::pair<int, int>> unlisted; // switch -> (NIC count, first NIC)
    for (int n = 0; n < int(t.nics.size()); ++n) {
        const Nic& nic = t.nics[n];
        if (nic.switchName.empty() || nic.switchIndex >= 0) continue;
        auto [it, inserted] = unlisted.try_emplace(nic.switchName, 0, n);
        ++it->second.first;
    }
    for (const auto& [name, info] : unlisted) {
        const Nic& first = t.nics[info.second];
        std::string host = first.host >= 0 ? t.hosts[first.host].name : std::string("?");
        c.diagnostics.addWarning({c.topologyPath, 0, 0,
                                  "switch \"" + name + "\" of " + std::to_string(info.first) + " NIC(s) (first " +
                                      first.ip.toString() + " on host \"" + host + "\") is not listed in switches[]"});
    }
    for (const Switch& s : t.switches)
        for (const std::string& up : s.uplinks)
            if (!t.switchByName(up))
                c.diagnostics.addWarning(
                    {c.topologyPath, 0, 0,
                     "uplink \"" + up + "\" of switch \"" + s.name + "\" is not listed in switches[]"});

    auto unknown = unknownRoceEndpoints(c.flows, t);
    for (const auto& u : unknown)
        c.diagnostics.addWarning({c.topologyPath, 0, 0,
                                  "RoCE endpoint " + c.flows.endpoints.at(u.id).toString() +
                                      " is not a NIC in topology.json (" + std::to_string(u.records) + " records)"});
}

} // namespace

Capture loadCapture(const std::string& pathOrFolder, const LoadOptions& options) {
    Capture c;
    c.source = pathOrFolder;
    fs::path p(pathOrFolder);
    std::error_code ec;
    if (pathOrFolder.empty() || !fs::exists(p, ec))
        throw InputError({pathOrFolder, 0, 0,
                          "no such file or folder (expected a capture folder, a flows.csv[.gz] or a topology.json)"});
    if (fs::is_directory(p, ec)) {
        c.flowsPath = flowsIn(p);
        if (c.flowsPath.empty())
            throw InputError({pathOrFolder, 0, 0,
                              "no flows.csv or flows.csv.gz in " + pathOrFolder +
                                  " (expected a capture folder holding flows.csv[.gz] and topology.json)"});
        if (isFile(p / "topology.json")) c.topologyPath = (p / "topology.json").string();
    } else {
        fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
        if (p.extension() == ".json") { // the topology named directly: the flows are next to it
            c.topologyPath = pathOrFolder;
            c.flowsPath = flowsIn(dir);
            if (c.flowsPath.empty())
                throw InputError({pathOrFolder, 0, 0,
                                  "no flows.csv or flows.csv.gz next to this topology file (in " + dir.string() + ")"});
        } else {
            c.flowsPath = pathOrFolder;
            if (isFile(dir / "topology.json")) c.topologyPath = (dir / "topology.json").string();
        }
    }

    // The topology first: it is small, and its errors are worth seeing before a long flows read.
    if (!c.topologyPath.empty()) {
        c.topology = readTopologyJson(c.topologyPath);
        c.hasTopology = true;
    }
    c.flows = readFlowsCsv(c.flowsPath, options, c.diagnostics);
    if (c.hasTopology) {
        checkTopology(c);
    } else {
        c.diagnostics.addWarning({c.source, 0, 0, "no topology.json: each NIC is treated as its own host"});
    }
    return c;
}

CaptureSummary summarize(const Capture& capture) {
    CaptureSummary s;
    const FlowTable& f = capture.flows;
    s.source = capture.source;
    s.records = f.size();
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (f.isRoce(i)) {
            ++s.roceRecords;
            s.roceBytes += f.bytes[i];
        } else {
            ++s.otherRecords;
            s.otherBytes += f.bytes[i];
        }
    }
    s.endpoints = f.endpoints.size();
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
