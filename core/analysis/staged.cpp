#include "analysis/staged.h"

#include "analysis/resolution.h"
#include "model/diagnostics.h"
#include "model/units.h"

#include <map>
#include <numeric>

namespace prism {

namespace {

// The records of `job` (ids of `grouped`) as a store selection: an endpoint whose node in the job spans all time
// is fetched whole, the others by the starts their nodes span.
RecordSelection selectionOf(const RecognizedJob& job, const FlowTable& grouped) {
    RecordSelection sel;
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    for (const RecognizedJob::Node& n : job.nodes) {
        const IpAddr& ip = grouped.endpoints.at(n.endpoint);
        if (n.from == lo && n.to == hi) sel.whole.push_back(ip);
        else sel.ranges.push_back({ip, n.from, n.to});
    }
    return sel;
}

// `job` with its endpoints as ids of `records` (the job's records, all of them, fetched from the store).
RecognizedJob mapped(const RecognizedJob& job, const FlowTable& grouped, FlowTable& records) {
    RecognizedJob out = job;
    auto map = [&](EndpointId e) { return records.endpoints.intern(grouped.endpoints.at(e)); };
    for (EndpointId& e : out.nics) e = map(e);
    for (EndpointId& e : out.unknownNics) e = map(e);
    for (RecognizedJob::Node& n : out.nodes) n.endpoint = map(n.endpoint);
    out.records.resize(records.size());
    std::iota(out.records.begin(), out.records.end(), 0u);
    return out;
}

} // namespace

Report analyzeStore(FlowStore& store, const Topology& topology, bool hasTopology, const AnalysisOptions& options,
                    StagedStats* stats, std::uint64_t memoryBudget) {
    StagedStats local;
    StagedStats& st = stats ? *stats : local;
    auto stage = [&](double lo, double hi) -> std::function<bool(double)> {
        if (!options.progress) return {};
        return [&, lo, hi](double f) { return options.progress(lo + (hi - lo) * f); };
    };
    Report report;
    const StoreOverview ov = store.overview();
    if (options.progress && !options.progress(0.05)) throw Cancelled();
    FlowTable grouped;
    if (ov.roceRecords)
        grouped = store.groupedRoce(ov.roceFirstNs, rhythmBinWidth(ov.roceFirstNs, ov.roceLastNs, options.recognition));
    st.groupedRows = grouped.size();
    if (options.progress && !options.progress(0.2)) throw Cancelled();

    CaptureSummary& s = report.capture.emplace();
    s.source = store.source();
    s.records = ov.records;
    s.roceRecords = ov.roceRecords;
    s.roceBytes = ov.roceBytes;
    s.otherRecords = ov.otherRecords;
    s.otherBytes = ov.otherBytes;
    s.endpoints = ov.endpoints;
    s.firstNs = ov.firstNs;
    s.lastNs = ov.lastNs;
    // Every RoCE endpoint is an endpoint of the grouped rows.
    std::vector<bool> roce(grouped.endpoints.size(), false);
    for (std::size_t i = 0; i < grouped.size(); ++i) roce[grouped.src[i]] = roce[grouped.dst[i]] = true;
    if (hasTopology) {
        s.hosts = topology.hosts.size();
        s.nics = topology.nics.size();
        for (EndpointId e = 0; e < roce.size(); ++e)
            s.unknownRoceEndpoints += roce[e] && !topology.nicByIp(grouped.endpoints.at(e));
    } else {
        s.nics = s.hosts = std::uint64_t(std::count(roce.begin(), roce.end(), true));
    }
    const LoadDiagnostics& d = store.diagnostics();
    s.skippedRows = d.skippedRows;
    s.warnings = d.warningCount;
    for (const InputIssue& e : d.errors) s.messages.push_back("error: " + e.toString());
    for (const InputIssue& w : d.warnings) s.messages.push_back("warning: " + w.toString());

    RecognitionResult recognition = recognizeJobs(grouped, topology, options.recognition, stage(0.2, 0.4));
    report.notes = recognition.notes;
    const std::size_t jobs = recognition.jobs.size();
    // Jobs are fetched in groups that fit the budget together (one pass of a file store per group), one at a
    // time without a budget.
    std::vector<std::uint64_t> expected(jobs, 0); // each job's records: a grouped row counts its records as packets
    for (std::size_t j = 0; j < jobs; ++j) {
        const RecognizedJob& rj = recognition.jobs[j];
        for (std::uint32_t r : rj.records) expected[j] += grouped.packets[r];
        if (memoryBudget && expected[j] * kStagedBytesPerRecord > memoryBudget)
            throw InputError({store.source(), 0, 0,
                              "job-" + std::to_string(j) + " (" + std::to_string(rj.nics.size()) + " GPUs, " +
                                  formatCount(expected[j]) + " RoCE records, " + formatTimestamp(rj.startNs) + " +" +
                                  formatDuration(rj.endNs - rj.startNs) + ") needs about " +
                                  formatBytes(expected[j] * kStagedBytesPerRecord) +
                                  " to analyse, more than the memory budget of " + formatBytes(memoryBudget) +
                                  " (--memory): analyse part of it (--from, --to) or give it more memory"});
    }
    for (std::size_t first = 0; first < jobs;) {
        std::size_t last = first + 1;
        std::uint64_t need = expected[first] * kStagedBytesPerRecord;
        while (memoryBudget && last < jobs && need + expected[last] * kStagedBytesPerRecord <= memoryBudget)
            need += expected[last++] * kStagedBytesPerRecord;
        std::vector<RecordSelection> selections;
        for (std::size_t j = first; j < last; ++j) selections.push_back(selectionOf(recognition.jobs[j], grouped));
        std::vector<FlowTable> tables = store.roceRecords(selections);
        ++st.fetches;
        for (std::size_t j = first; j < last; ++j) {
            const double base = 0.4 + 0.6 * double(j) / double(jobs), span = 0.6 / double(jobs);
            FlowTable records = std::move(tables[j - first]);
            st.largestJob = std::max<std::uint64_t>(st.largestJob, records.size());
            st.fetchedRecords += records.size();
            const RecognizedJob job = mapped(recognition.jobs[j], grouped, records);
            JobAnalysis analysed;
            report.jobs.push_back(analyzeJob(records, topology, job, j, report.jobs, s.firstNs, options, true,
                                             analysed, stage(base + 0.2 * span, base + span)));
        }
        first = last;
    }
    checkResolution(store.resolution(), report);
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    return report;
}

} // namespace prism
