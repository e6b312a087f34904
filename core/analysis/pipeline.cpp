#include "analysis/pipeline.h"

#include "analysis/job_index.h"
#include "analysis/resolution.h"
#include "util/memory.h"
#include "util/parallel.h"

namespace prism {

JobInfo analyzeJob(const FlowTable& flows, const Topology& topo, const RecognizedJob& rj, std::size_t j,
                   const std::vector<JobInfo>& earlier, std::int64_t firstNs, const AnalysisOptions& options,
                   bool reportOnly, JobAnalysis& analysed, const std::function<bool(double)>& progress,
                   const std::function<void()>& portsRead) {
    ParallelismResult par = inferParallelism(flows, topo, rj, options.parallelism);
    // Parallelism's window in pair order (up to a million records, 16 MB) goes back before the steps take theirs,
    // for an analysis that is kept (the GUI's: on the first half of `large` its peak 139-141 -> 138 MiB from
    // capture to window, 156-158 -> 154-155.5 opened interactively, as fast).
    if (!reportOnly) releaseFreedMemory();
    JobInfo info;
    info.id = "job-" + std::to_string(j);
    for (EndpointId e : rj.nics) info.gpus.push_back(flows.endpoints.at(e).toString());
    for (int h : rj.hosts) info.hosts.push_back(topo.hosts[std::size_t(h)].name);
    for (EndpointId e : rj.unknownNics) info.hosts.push_back(flows.endpoints.at(e).toString());
    info.gpuCount = par.gpus;
    info.tp = par.tp;
    info.pp = par.pp;
    info.dp = par.dp;
    for (std::size_t g = 0; g < par.dpGroups.size(); ++g) {
        std::vector<std::string> ips;
        for (EndpointId e : par.dpGroups[g]) ips.push_back(flows.endpoints.at(e).toString());
        for (const IpAddr& ip : par.quietMembers[g]) {
            ips.push_back(ip.toString());
            info.gpus.push_back(ip.toString());
        }
        info.dpGroups.push_back(std::move(ips));
    }
    for (const auto& c : par.ppChains) {
        std::vector<std::string> ips;
        for (EndpointId e : c) ips.push_back(flows.endpoints.at(e).toString());
        info.ppChains.push_back(std::move(ips));
    }
    info.startNs = rj.startNs;
    info.endNs = rj.endNs;
    info.notes = par.notes;
    if (rj.restartOf >= 0) {
        // Same GPUs, new connections, after the other ended: a restart when the shape is the same too.
        const JobInfo& before = earlier[std::size_t(rj.restartOf)];
        if (before.tp == par.tp && before.pp == par.pp && before.dp == par.dp)
            info.restartOf = before.id;
        else
            info.notes.push_back("runs on the GPUs of " + before.id + " after it ended, in another shape (TP " +
                                 std::to_string(par.tp) + " x PP " + std::to_string(par.pp) + " x DP " +
                                 std::to_string(par.dp) + "): a new job, not a restart");
    }
    if (!rj.unknownNics.empty() && !topo.nics.empty()) // without a topology the capture says it once
        info.notes.push_back(std::to_string(rj.unknownNics.size()) +
                             " endpoints of this job are not in topology.json; each counts as its own host");
    // Stages 3-5: steps from the DP sync bursts, the per-rank timeline in their aligned time, diagnosis.
    const JobIndex index(flows, topo, rj, par); // one per job, for steps, timeline and diagnosis
    StepDivision division = divideSteps(flows, topo, rj, par, options.steps, firstNs, &index);
    info.steps = division.steps;
    const int divisionNotes = int(info.notes.size());
    if (division.firstCutNote >= 0) analysed.firstCutNote = divisionNotes + division.firstCutNote;
    if (division.lastCutNote >= 0) analysed.lastCutNote = divisionNotes + division.lastCutNote;
    for (const std::string& n : division.notes) info.notes.push_back(n);
    if (progress && !progress(0.3)) throw Cancelled();
    // What parallelism and steps freed goes back before the timeline takes memory of its own: the GUI's
    // timeline then grows from what is held, not from what was (on `large` its peak 295-300 -> 287-293 MB, no
    // slower). A report's statistics gain nothing by it.
    if (!reportOnly) releaseFreedMemory();
    // Slow links need the steps, not the timeline: they are found on a thread of their own while the timeline is
    // built (its passes take both cores, but leave gaps between them; on `large` 0.1 s less for the job of 5M
    // records, and 0.2 s less for the GUI's, whose timeline holds a block of ranks' transfers at a time: 4 MB more
    // at its peak). Where no thread can be started, found after the timeline.
    std::vector<Finding> links;
    Aside findLinks([&] { links = findSlowLinks(flows, topo, rj, par, division, options.diagnosis, &index); });
    JobTimeline timeline = reportOnly ? buildTimelineStats(flows, topo, rj, par, division, &index)
                                      : buildTimeline(flows, topo, rj, par, division, &index, options.packSegments);
    findLinks.wait();
    if (portsRead) portsRead(); // both read the source ports
    if (progress && !progress(0.7)) throw Cancelled();
    Diagnosis diagnosis = diagnose(flows, topo, rj, par, division, timeline, options.diagnosis, &index, &links);
    for (std::size_t k = 0; k < info.steps.size(); ++k) info.steps[k].slow = diagnosis.slow[k] != 0;
    timeline.steps = info.steps;
    info.findings = std::move(diagnosis.findings);
    for (const std::string& n : diagnosis.notes) info.notes.push_back(n);
    analysed.parallelism = std::move(par);
    if (!reportOnly) {
        analysed.division = std::move(division);
        analysed.timeline = std::move(timeline);
    }
    if (progress && !progress(1.0)) throw Cancelled();
    return info;
}

namespace {

// reportOnly: the timelines are not kept, so only the statistics diagnosis needs are built.
Analysis run(const Capture& capture, const AnalysisOptions& options, bool reportOnly, FlowTable* release = nullptr) {
    Analysis out;
    Report& report = out.report;
    const FlowTable& flows = capture.flows;
    const Topology& topo = capture.topology;
    auto stage = [&](double lo, double hi) -> std::function<bool(double)> {
        if (!options.progress) return {};
        return [&, lo, hi](double f) { return options.progress(lo + (hi - lo) * f); };
    };
    // The capture's summary and time resolution read every record but need no stage: taken on a thread of their
    // own while recognition (one core) runs. Where no thread starts, here.
    CaptureSummary summary;
    TimeResolution resolution;
    Aside summarise([&] {
        summary = summarize(capture);
        resolution = measureResolution(flows);
    });
    out.recognition = recognizeJobs(flows, topo, options.recognition, stage(0.0, 0.6));
    summarise.wait();
    if (release) { // read by recognition and the summary alone
        std::vector<std::uint16_t>().swap(release->dstPort);
        std::vector<std::uint8_t>().swap(release->proto);
        release->packets = CountColumn();
    }
    report.capture = std::move(summary);
    report.notes = out.recognition.notes;
    auto& jobs = out.recognition.jobs;
    // A job's record list is read by its own analysis alone (and by a session saved, or runs compared, after).
    // Where the records are let go, the lists of the jobs not yet analysed wait packed (see below).
    if (release)
        for (std::size_t j = 1; j < jobs.size(); ++j) jobs[j].packRecords();
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        const double base = 0.6 + 0.4 * double(j) / double(jobs.size()), span = 0.4 / double(jobs.size());
        JobAnalysis& analysed = out.jobs.emplace_back();
        jobs[j].unpackRecords();
        // The last job's slow links and timeline are the last readers of the source ports: where the records are
        // let go, the column goes as soon as both are done (2 bytes a record).
        std::function<void()> portsRead;
        if (release && j + 1 == jobs.size())
            portsRead = [release] { std::vector<std::uint16_t>().swap(release->srcPort); };
        report.jobs.push_back(analyzeJob(flows, topo, jobs[j], j, report.jobs, report.capture->firstNs, options,
                                         reportOnly, analysed, stage(base, base + span), portsRead));
        // Done with it: for a report the list goes now, and an analysis that lets the records go (the GUI's)
        // keeps it packed: a varint of each difference, 1-2 bytes a record where 4 (on `large` the first job's
        // list is 18 MB, 5 packed, while the second job is analysed).
        if (reportOnly) decltype(jobs[j].records)().swap(jobs[j].records);
        else if (release) jobs[j].packRecords();
    }
    // Records too coarse in time for the steps they hold: said plainly, with the exporter setting that fixes it.
    checkResolution(resolution, report);
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    return out;
}

} // namespace

Analysis runAnalysis(const Capture& capture, const AnalysisOptions& options) { return run(capture, options, false); }

Analysis runAnalysisReleasing(Capture& capture, const AnalysisOptions& options) {
    return run(capture, options, false, &capture.flows);
}

Report analyzeCapture(const Capture& capture, const AnalysisOptions& options) {
    return run(capture, options, true).report;
}

Report analyzeCaptureReleasing(Capture& capture, const AnalysisOptions& options) {
    return run(capture, options, true, &capture.flows).report;
}

} // namespace prism
