#include "analysis/pipeline.h"

namespace prism {

Analysis runAnalysis(const Capture& capture, const AnalysisOptions& options) {
    Analysis out;
    Report& report = out.report;
    report.capture = summarize(capture);
    const FlowTable& flows = capture.flows;
    const Topology& topo = capture.topology;
    auto stage = [&](double lo, double hi) -> std::function<bool(double)> {
        if (!options.progress) return {};
        return [&, lo, hi](double f) { return options.progress(lo + (hi - lo) * f); };
    };
    out.recognition = recognizeJobs(flows, topo, options.recognition, stage(0.0, 0.6));
    report.notes = out.recognition.notes;
    const auto& jobs = out.recognition.jobs;
    auto ipText = [&](EndpointId e) { return flows.endpoints.at(e).toString(); };
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        const RecognizedJob& rj = jobs[j];
        ParallelismResult par = inferParallelism(flows, topo, rj, options.parallelism);
        JobInfo info;
        info.id = "job-" + std::to_string(j);
        for (EndpointId e : rj.nics) info.gpus.push_back(ipText(e));
        for (int h : rj.hosts) info.hosts.push_back(topo.hosts[std::size_t(h)].name);
        for (EndpointId e : rj.unknownNics) info.hosts.push_back(ipText(e));
        info.tp = par.tp;
        info.pp = par.pp;
        info.dp = par.dp;
        for (const auto& g : par.dpGroups) {
            std::vector<std::string> ips;
            for (EndpointId e : g) ips.push_back(ipText(e));
            info.dpGroups.push_back(std::move(ips));
        }
        for (const auto& c : par.ppChains) {
            std::vector<std::string> ips;
            for (EndpointId e : c) ips.push_back(ipText(e));
            info.ppChains.push_back(std::move(ips));
        }
        info.startNs = rj.startNs;
        info.endNs = rj.endNs;
        info.notes = par.notes;
        if (!rj.unknownNics.empty())
            info.notes.push_back(std::to_string(rj.unknownNics.size()) +
                                 " endpoints of this job are not in topology.json; each counts as its own host");
        out.timelines.push_back(buildTimeline(flows, topo, rj, par, info.steps));
        report.jobs.push_back(std::move(info));
        out.parallelism.push_back(std::move(par));
        if (options.progress && !options.progress(0.6 + 0.4 * double(j + 1) / double(jobs.size())))
            throw Cancelled();
    }
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    return out;
}

Report analyzeCapture(const Capture& capture, const AnalysisOptions& options) {
    return runAnalysis(capture, options).report;
}

} // namespace prism
