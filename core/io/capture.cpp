// loadCapture: resolves folders and named files to flow data files (any kind, by content) + topology.json,
// loads them, merges the flow data and checks it against the topology.
#include "io/capture.h"

#include "io/clickhouse.h"
#include "io/flow_source.h"

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

// The flow data files of a folder, by content, in name order; `topology` gets its topology (topology.json
// when it is one, else the only topology-like JSON). Files that are not flow data (truth.json, a report, a
// README) are skipped without a word; "X.gz" is skipped, with a warning, when X is there too (the same
// data twice, presumably). A folder that cannot be listed is an error; a file that cannot be read is a
// warning, and the error when the folder has no other flow data (a permission is not missing data).
std::vector<FlowFile> flowFilesIn(const fs::path& dir, std::string& topology, LoadDiagnostics& diag,
                                  std::string* skipped = nullptr) {
    std::vector<fs::path> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) throw InputError({dir.string(), 0, 0, "cannot list the folder: " + ec.message()});
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) throw InputError({dir.string(), 0, 0, "cannot list the folder: " + ec.message()});
        const fs::directory_entry& entry = *it;
        std::error_code kind;
        if (!entry.is_directory(kind) && entry.path().filename().string().front() != '.') names.push_back(entry.path());
    }
    std::sort(names.begin(), names.end());
    std::vector<FlowFile> files;
    std::vector<std::string> topologies;
    std::vector<InputError> unreadable;
    for (const fs::path& p : names) {
        SourceInfo info;
        try {
            info = detectSource(p.string());
        } catch (const InputError& e) {
            unreadable.push_back(e);
            continue;
        }
        if (info.kind == SourceKind::Topology) topologies.push_back(p.string());
        if (!info.isFlowData()) {
            if (skipped) *skipped += "; " + p.filename().string() + ": " + info.what;
            continue;
        }
        fs::path plain = fs::path(p).replace_extension();
        if (p.extension() == ".gz" && std::find(names.begin(), names.end(), plain) != names.end()) {
            diag.addWarning({p.string(), 0, 0,
                             "skipped: " + plain.filename().string() +
                                 " is in the same folder (the same data uncompressed, presumably)"});
            continue;
        }
        files.push_back({p.string(), info});
    }
    if (files.empty() && !unreadable.empty()) throw unreadable.front();
    for (const InputError& e : unreadable) diag.addWarning(e.issue());
    topology.clear();
    // topology.json by its name even when it does not parse: readTopologyJson then says where it breaks.
    if (isFile(dir / "topology.json"))
        topology = (dir / "topology.json").string();
    else if (topologies.size() == 1)
        topology = topologies.front();
    return files;
}

// One table of every record of `tables` (endpoints interned anew, congestion counts kept), sorted by start.
FlowTable mergeTables(std::vector<FlowTable> tables) {
    if (tables.size() == 1) return std::move(tables.front());
    FlowTable out = FlowTable::concatenate(std::move(tables));
    out.sortByStart();
    return out;
}

} // namespace

void checkTopologyOf(const Topology& t, const std::string& topologyPath,
                     const std::vector<std::pair<IpAddr, std::uint64_t>>& unknownRoce, LoadDiagnostics& diag) {
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
        diag.addWarning({topologyPath, 0, 0,
                                  "switch \"" + name + "\" of " + std::to_string(info.first) + " NIC(s) (first " +
                                      first.ip.toString() + " on host \"" + host + "\") is not listed in switches[]"});
    }
    for (const Switch& s : t.switches)
        for (const std::string& up : s.uplinks)
            if (!t.switchByName(up))
                diag.addWarning(
                    {topologyPath, 0, 0,
                     "uplink \"" + up + "\" of switch \"" + s.name + "\" is not listed in switches[]"});

    for (const auto& [ip, records] : unknownRoce)
        diag.addWarning({topologyPath, 0, 0,
                         "RoCE endpoint " + ip.toString() + " is not a NIC in topology.json (" +
                             std::to_string(records) + " records)"});
}

namespace {

void checkTopology(Capture& c) {
    std::vector<std::pair<IpAddr, std::uint64_t>> unknown;
    for (const auto& u : unknownRoceEndpoints(c.flows, c.topology)) unknown.emplace_back(c.flows.endpoints.at(u.id), u.records);
    checkTopologyOf(c.topology, c.topologyPath, unknown, c.diagnostics);
}

} // namespace

Capture loadCapture(const std::string& pathOrFolder, const LoadOptions& options) {
    return loadCapture(std::vector<std::string>{pathOrFolder}, options);
}

CaptureFiles findCaptureFiles(const std::vector<std::string>& sources, const LoadOptions& options) {
    CaptureFiles c;
    for (const std::string& s : sources) c.source += (c.source.empty() ? "" : " + ") + s;
    if (sources.empty()) throw InputError({"", 0, 0, "no capture given (expected a folder or flow data files)"});

    // Every source to flow files and at most one topology (--topology wins over one found).
    std::vector<FlowFile>& files = c.files;
    std::string foundTopology;
    for (const std::string& source : sources) {
        if (ClickHouseUrl::looksLikeUrl(source)) { // a table on a server: no topology next to it
            files.push_back({source, detectSource(source)});
            continue;
        }
        fs::path p(source);
        std::error_code ec;
        if (source.empty() || !fs::exists(p, ec))
            throw InputError({source, 0, 0,
                              "no such file or folder (expected a capture folder, a flow data file or a topology.json)"});
        if (fs::is_directory(p, ec)) {
            std::string topology, skipped;
            auto inFolder = flowFilesIn(p, topology, c.diagnostics, &skipped);
            if (inFolder.empty()) {
                if (!topology.empty()) readTopologyJson(topology); // its errors first, as with flow data
                throw InputError({source, 0, 0,
                                  "no flows.csv or flows.csv.gz in " + source +
                                      ", nor any other flow data (expected a capture folder holding topology.json and "
                                      "flow data: " + std::string(expectedFlowData()) + ")" + skipped});
            }
            files.insert(files.end(), inFolder.begin(), inFolder.end());
            if (foundTopology.empty()) foundTopology = topology;
            continue;
        }
        SourceInfo info = detectSource(source);
        fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
        if (info.kind == SourceKind::Topology && sources.size() == 1) {
            // The topology named alone: the flow data is next to it.
            foundTopology = source;
            std::string ignored;
            files = flowFilesIn(dir, ignored, c.diagnostics);
            if (files.empty())
                throw InputError({source, 0, 0,
                                  "no flows.csv or flows.csv.gz next to this topology file (in " + dir.string() +
                                      "), nor any other flow data"});
        } else if (info.kind == SourceKind::Topology) {
            foundTopology = source;
        } else if (info.isFlowData()) {
            files.push_back({source, info});
            if (foundTopology.empty() && isFile(dir / "topology.json")) foundTopology = (dir / "topology.json").string();
        } else {
            throw InputError({source, 0, 0,
                              "not flow data: found " + info.what + "; expected " + expectedFlowData() +
                                  " (or a folder holding them, or topology.json)"});
        }
    }
    if (files.empty())
        throw InputError({c.source, 0, 0, std::string("no flow data given (expected ") + expectedFlowData() + ")"});
    c.topologyPath = options.topologyPath.empty() ? foundTopology : options.topologyPath;
    return c;
}

Capture loadCapture(const std::vector<std::string>& sources, const LoadOptions& options) {
    return loadCapture(findCaptureFiles(sources, options), options);
}

Capture loadCapture(CaptureFiles found, const LoadOptions& options) {
    Capture c;
    c.source = found.source;
    c.topologyPath = found.topologyPath;
    c.diagnostics = std::move(found.diagnostics);
    const std::vector<FlowFile>& files = found.files;
    // The topology first: it is small, and its errors are worth seeing before a long flows read.
    if (!c.topologyPath.empty()) {
        c.topology = readTopologyJson(c.topologyPath);
        c.hasTopology = true;
    }
    std::vector<FlowTable> tables;
    for (std::size_t k = 0; k < files.size(); ++k) {
        LoadOptions fileOptions = options;
        if (options.progress) { // one share of the progress per file
            double lo = double(k) / double(files.size()), span = 1.0 / double(files.size());
            fileOptions.progress = [&, lo, span](double f) { return options.progress(lo + span * f); };
        }
        std::string description;
        tables.push_back(readFlowSource(files[k].path, files[k].info, fileOptions, c.diagnostics, &description));
        c.flowsPaths.push_back(files[k].path);
        c.flowsKinds.push_back(description);
    }
    c.flowsPath = c.flowsPaths.front();
    c.flows = mergeTables(std::move(tables));
    if (options.fromNs != std::numeric_limits<std::int64_t>::min() ||
        options.toNs != std::numeric_limits<std::int64_t>::max())
        c.flows.keepStartsIn(options.fromNs, options.toNs);
    c.flows.startNs.compact(options.threads); // sorted: 4 bytes a start where dense enough (StartColumn)
    if (c.hasTopology) {
        checkTopology(c);
    } else {
        c.diagnostics.addWarning({c.source, 0, 0, "no topology.json: each NIC is treated as its own host"});
    }
    return c;
}

} // namespace prism
