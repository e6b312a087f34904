#include "analysis/staged.h"

#include "analysis/resolution.h"
#include "model/diagnostics.h"
#include "model/units.h"

#include <map>
#include <numeric>

namespace prism {

namespace {

// The records of `job` (endpoint ids of `ids`) as a store selection: an endpoint whose node in the job spans all time
// is fetched whole, the others by the starts their nodes span.
RecordSelection selectionOf(const RecognizedJob& job, const EndpointTable& ids) {
    RecordSelection sel;
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    for (const RecognizedJob::Node& n : job.nodes) {
        const IpAddr& ip = ids.at(n.endpoint);
        if (n.from == lo && n.to == hi) sel.whole.push_back(ip);
        else sel.ranges.push_back({ip, n.from, n.to});
    }
    return sel;
}

// `job` with its endpoints as ids of `records` (the job's records, all of them, fetched from the store).
RecognizedJob mapped(const RecognizedJob& job, const EndpointTable& ids, FlowTable& records) {
    RecognizedJob out = job;
    auto map = [&](EndpointId e) { return records.endpoints.intern(ids.at(e)); };
    for (EndpointId& e : out.nics) e = map(e);
    for (EndpointId& e : out.unknownNics) e = map(e);
    for (RecognizedJob::Node& n : out.nodes) n.endpoint = map(n.endpoint);
    out.records.resize(records.size());
    std::iota(out.records.begin(), out.records.end(), 0u);
    out.recordCount = records.size();
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
    // Recognition: on the records themselves when the store can show them all (three passes), else on the
    // RoCE records grouped by connection and bin (one query).
    FlowTable grouped;
    RecognitionResult recognition;
    const EndpointTable* ids = nullptr;
    std::vector<bool> roce; // per endpoint id of `ids`: in a RoCE record
    std::vector<std::uint64_t> expected; // per job, its records
    RecognitionPasses passes(topology, options.recognition);
    StoreOverview ov;
    if (store.scanAll([&](const StoreBatch& b) {
            const FlowTable& t = b.records;
            for (std::size_t i = 0; i < t.size(); ++i)
                if (t.isRoce(i) && b.use(i)) {
                    const EndpointId src = b.global[t.src[i]], dst = b.global[t.dst[i]];
                    passes.connection(src, dst, t.srcPort[i], t.startNs[i], t.endNs[i]);
                    if (roce.size() <= std::max(src, dst)) roce.resize(std::max(src, dst) + 1, false);
                    roce[src] = roce[dst] = true;
                }
        })) {
        passes.endConnections();
        ov = store.overview(); // a file store counted in that pass
        store.scanAll([&](const StoreBatch& b) {
            const FlowTable& t = b.records;
            for (std::size_t i = 0; i < t.size(); ++i)
                if (t.isRoce(i) && b.use(i))
                    passes.record(b.global[t.src[i]], b.global[t.dst[i]], t.startNs[i], t.endNs[i], t.bytes[i]);
        });
        ids = store.globalEndpoints();
        if (passes.endGraph(*ids))
            store.scanAll([&](const StoreBatch& b) {
                const FlowTable& t = b.records;
                for (std::size_t i = 0; i < t.size(); ++i)
                    if (t.isRoce(i) && b.use(i))
                        passes.series(passes.senderNode(b.global[t.src[i]], t.startNs[i]), t.startNs[i], t.bytes[i]);
            });
        recognition = passes.result(*ids);
        for (const RecognizedJob& rj : recognition.jobs) expected.push_back(rj.recordCount);
    } else {
        ov = store.overview();
        if (ov.roceRecords)
            grouped =
                store.groupedRoce(ov.roceFirstNs, rhythmBinWidth(ov.roceFirstNs, ov.roceLastNs, options.recognition));
        st.groupedRows = grouped.size();
        roce.assign(grouped.endpoints.size(), false);
        for (std::size_t i = 0; i < grouped.size(); ++i) roce[grouped.src[i]] = roce[grouped.dst[i]] = true;
        recognition = recognizeJobs(grouped, topology, options.recognition, stage(0.2, 0.4));
        ids = &grouped.endpoints;
        for (const RecognizedJob& rj : recognition.jobs) { // a grouped row counts its records as packets
            std::uint64_t n = 0;
            for (std::uint32_t r : rj.records) n += grouped.packets[r];
            expected.push_back(n);
        }
    }
    if (options.progress && !options.progress(0.4)) throw Cancelled();

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
    if (hasTopology) {
        s.hosts = topology.hosts.size();
        s.nics = topology.nics.size();
        for (EndpointId e = 0; e < roce.size(); ++e)
            s.unknownRoceEndpoints += roce[e] && !topology.nicByIp(ids->at(e));
    } else {
        s.nics = s.hosts = std::uint64_t(std::count(roce.begin(), roce.end(), true));
    }
    const LoadDiagnostics& d = store.diagnostics();
    s.skippedRows = d.skippedRows;
    s.warnings = d.warningCount;
    for (const InputIssue& e : d.errors) s.messages.push_back("error: " + e.toString());
    for (const InputIssue& w : d.warnings) s.messages.push_back("warning: " + w.toString());

    report.notes = recognition.notes;
    const std::size_t jobs = recognition.jobs.size();
    // A job that does not fit the budget is refused before anything is fetched.
    for (std::size_t j = 0; j < jobs; ++j) {
        const RecognizedJob& rj = recognition.jobs[j];
        if (memoryBudget && expected[j] * kStagedBytesPerRecord > memoryBudget)
            throw InputError({store.source(), 0, 0,
                              "job-" + std::to_string(j) + " (" + std::to_string(rj.nics.size()) + " GPUs, " +
                                  formatCount(expected[j]) + " RoCE records, " + formatTimestamp(rj.startNs) + " +" +
                                  formatDuration(rj.endNs - rj.startNs) + ") needs about " +
                                  formatBytes(expected[j] * kStagedBytesPerRecord) +
                                  " to analyse, more than the memory budget of " + formatBytes(memoryBudget) +
                                  " (--memory): analyse part of it (--from, --to) or give it more memory"});
    }
    // Jobs are fetched in groups that fit the budget together (one pass of a file store per group), one at a
    // time without a budget.
    for (std::size_t first = 0; first < jobs;) {
        std::size_t last = first + 1;
        std::uint64_t need = expected[first] * kStagedBytesPerRecord;
        while (memoryBudget && last < jobs && need + expected[last] * kStagedBytesPerRecord <= memoryBudget)
            need += expected[last++] * kStagedBytesPerRecord;
        std::vector<RecordSelection> selections;
        for (std::size_t j = first; j < last; ++j) selections.push_back(selectionOf(recognition.jobs[j], *ids));
        std::vector<FlowTable> tables = store.roceRecords(selections);
        ++st.fetches;
        for (std::size_t j = first; j < last; ++j) {
            const double base = 0.4 + 0.6 * double(j) / double(jobs), span = 0.6 / double(jobs);
            FlowTable records = std::move(tables[j - first]);
            st.largestJob = std::max<std::uint64_t>(st.largestJob, records.size());
            st.fetchedRecords += records.size();
            const RecognizedJob job = mapped(recognition.jobs[j], *ids, records);
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
