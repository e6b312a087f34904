#include "analysis_session.h"

#include "io/file_store.h"
#include "io/flow_source.h"
#include "model/diagnostics.h"
#include "model/units.h"

#include <stdexcept>

namespace prism::ui {

namespace {

// Every host, NIC and switch as they were: a session's analysis names hosts by their index.
bool sameTopology(const Topology& a, const Topology& b) {
    if (a.hosts.size() != b.hosts.size() || a.nics.size() != b.nics.size() || a.switches.size() != b.switches.size())
        return false;
    for (std::size_t i = 0; i < a.hosts.size(); ++i)
        if (a.hosts[i].name != b.hosts[i].name || a.hosts[i].nics != b.hosts[i].nics) return false;
    for (std::size_t i = 0; i < a.nics.size(); ++i) {
        const Nic &x = a.nics[i], &y = b.nics[i];
        if (!(x.ip == y.ip) || x.gpus != y.gpus || x.rail != y.rail || x.switchName != y.switchName || x.host != y.host)
            return false;
    }
    for (std::size_t i = 0; i < a.switches.size(); ++i)
        if (a.switches[i].name != b.switches[i].name || a.switches[i].tier != b.switches[i].tier ||
            a.switches[i].uplinks != b.switches[i].uplinks)
            return false;
    return true;
}

} // namespace

void AnalysisSession::buildLod(const std::function<bool(double)>& progress) {
    std::vector<int> all(analysis.jobs.size());
    for (std::size_t j = 0; j < all.size(); ++j) all[j] = int(j);
    buildLod(all, progress);
}

void AnalysisSession::buildLod(const std::vector<int>& jobs, const std::function<bool(double)>& progress) {
    const auto& analysed = analysis.jobs;
    lod.assign(analysed.size(), nullptr);
    std::size_t done = 0;
    for (int j : jobs) {
        if (j < 0 || std::size_t(j) >= analysed.size()) continue;
        auto index = std::make_shared<TimelineIndex>();
        index->build(analysed[std::size_t(j)].timeline);
        lod[std::size_t(j)] = std::move(index);
        if (progress && !progress(double(++done) / double(jobs.size()))) throw Cancelled();
    }
}

std::shared_ptr<const Capture> AnalysisSession::withRecords(const std::function<bool(double)>& progress) const {
    if (recordsHeld()) return std::shared_ptr<const Capture>(std::shared_ptr<const Capture>(), &capture); // not owned
    LoadOptions lo = loadOptions;
    lo.progress = progress;
    CaptureFiles files = findCaptureFiles(capturePaths, lo);
    const std::string shown =
        files.files.empty()
            ? capture.source
            : files.files.front().path +
                  (files.files.size() > 1 ? " (and " + std::to_string(files.files.size() - 1) + " more)" : "");
    const std::uint64_t available = availableMemory(), need = wholeLoadEstimate(files);
    if (available && need > available)
        throw std::runtime_error(shown + ": its records are read again for this, which needs about " +
                                 formatBytes(need) + ", more than the " + formatBytes(available) +
                                 " available now: close other programs, or use `llmprism-cli` (import, compare)");
    auto again = std::make_shared<Capture>(loadCapture(std::move(files), lo));
    // A session holds its capture's records and their analysis together (record indices, endpoint ids and host
    // indices point into them): the files must hold what was analysed.
    if (again->flows.fingerprint() != recordsFingerprint || again->hasTopology != capture.hasTopology ||
        !sameTopology(again->topology, capture.topology))
        throw std::runtime_error(shown + ": the capture changed since it was opened (" +
                                 std::to_string(analysis.report.capture ? analysis.report.capture->records : 0) +
                                 " records then, " + std::to_string(again->flows.size()) +
                                 " now, or other records or topology): open it again to analyse what it holds now");
    again->source = capture.source; // as it was named when opened
    return again;
}

} // namespace prism::ui
