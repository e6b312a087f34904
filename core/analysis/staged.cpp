#include "analysis/staged.h"

#include "analysis/diagnosis_internal.h"
#include "analysis/resolution.h"
#include "analysis/stats.h"
#include "model/diagnostics.h"
#include "model/units.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

namespace prism {

namespace {

// The upper median step duration (0 without steps).
std::int64_t medianStep(const std::vector<StepInfo>& steps) {
    std::vector<std::int64_t> d;
    d.reserve(steps.size());
    for (const StepInfo& st : steps) d.push_back(st.durationNs());
    return upperMedian(std::move(d));
}

// The records of `job` (endpoint ids of `ids`) as a store selection: an endpoint whose node in the job spans all time
// is fetched whole, the others by the starts their nodes span; all of them start within the job's span (recognition
// saw each record of its nodes: the earliest start and the latest end).
RecordSelection selectionOf(const RecognizedJob& job, const EndpointTable& ids) {
    RecordSelection sel;
    if (job.startNs <= job.endNs) {
        sel.from = job.startNs;
        sel.to = job.endNs < std::numeric_limits<std::int64_t>::max() ? job.endNs + 1 : job.endNs;
    }
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

// The selection of `job` limited to the records that start in [from, to).
RecordSelection windowOf(const RecognizedJob& job, const EndpointTable& ids, std::int64_t from, std::int64_t to) {
    RecordSelection sel;
    for (const RecognizedJob::Node& n : job.nodes) {
        const std::int64_t a = std::max(n.from, from), b = std::min(n.to, to);
        if (a < b) sel.ranges.push_back({ids.at(n.endpoint), a, b});
    }
    return sel;
}

bool sameSubject(const Finding& a, const Finding& b) {
    return a.kind == b.kind && a.ip == b.ip && a.srcIp == b.srcIp && a.dstIp == b.dstIp &&
           a.switchName == b.switchName && a.stage == b.stage && a.kind != "slow_step";
}

// Windows of one job analysed apart, merged into one job entry: the structure of the window with the most
// steps, the steps each window keeps (whole steps, each window fetched with a margin on both sides), findings
// renumbered to the merged steps and merged by subject (same kind and place: steps spanned, strongest score and
// its message).
struct WindowMerge {
    JobInfo job;
    bool started = false;
    std::size_t bestSteps = 0;
    std::vector<std::string> shapes; // "TP x PP x DP" of each window, to note a disagreement

    // The window's steps that start at `from` or later and end by `to` are kept. `first` / `last`: the window
    // starts / ends where the job does (notes about the capture's edges are kept from those windows only).
    // `cut`: the window's analysis, whose firstCutNote / lastCutNote name the notes about its own edges.
    void add(JobInfo w, const JobAnalysis& cut, std::int64_t from, std::int64_t to, bool first, bool last) {
        std::vector<int> index(w.steps.size(), -1); // window step -> merged step
        std::vector<StepInfo> kept;
        for (std::size_t i = 0; i < w.steps.size(); ++i)
            if (w.steps[i].startNs >= from && w.steps[i].endNs <= to) {
                index[i] = int(job.steps.size() + kept.size());
                kept.push_back(w.steps[i]);
            }
        const auto mapStep = [&](int s) {
            if (index.empty()) return int(job.steps.size());
            s = std::clamp(s, 0, int(index.size()) - 1);
            for (int d = 0; d < int(index.size()); ++d) { // the nearest kept step
                if (s - d >= 0 && index[std::size_t(s - d)] >= 0) return index[std::size_t(s - d)];
                if (s + d < int(index.size()) && index[std::size_t(s + d)] >= 0) return index[std::size_t(s + d)];
            }
            return int(job.steps.size());
        };
        const std::string shape = std::to_string(w.tp) + " x " + std::to_string(w.pp) + " x " + std::to_string(w.dp);
        if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
        if (!started || kept.size() > bestSteps) { // the structure of the window that saw the most steps
            std::vector<StepInfo> steps = std::move(job.steps);
            std::vector<Finding> findings = std::move(job.findings);
            std::vector<std::string> notes = std::move(job.notes);
            const std::int64_t start = started ? job.startNs : w.startNs;
            job = w;
            job.steps = std::move(steps);
            job.findings = std::move(findings);
            job.notes = std::move(notes);
            job.startNs = start;
            bestSteps = kept.size();
        }
        started = true;
        job.endNs = std::max(job.endNs, w.endNs);
        for (Finding f : w.findings) {
            const bool inWindow = f.kind != "slow_step" ||
                                  (f.firstStep >= 0 && std::size_t(f.firstStep) < index.size() && index[std::size_t(f.firstStep)] >= 0);
            if (!inWindow) continue; // a step outside the window: its own window reports it
            f.firstStep = mapStep(f.firstStep);
            f.lastStep = std::max(f.firstStep, mapStep(f.lastStep));
            for (int& o : f.occurrences) o = mapStep(o);
            auto same = std::find_if(job.findings.begin(), job.findings.end(),
                                     [&](const Finding& g) { return sameSubject(f, g); });
            if (same == job.findings.end()) {
                job.findings.push_back(std::move(f));
                continue;
            }
            const int first = std::min(same->firstStep, f.firstStep), last = std::max(same->lastStep, f.lastStep);
            std::vector<int> occurrences = same->occurrences;
            occurrences.insert(occurrences.end(), f.occurrences.begin(), f.occurrences.end());
            if (f.score > same->score) *same = std::move(f);
            same->firstStep = first;
            same->lastStep = last;
            std::sort(occurrences.begin(), occurrences.end());
            occurrences.erase(std::unique(occurrences.begin(), occurrences.end()), occurrences.end());
            same->occurrences = std::move(occurrences);
        }
        for (StepInfo& st : kept) job.steps.push_back(st);
        for (std::size_t i = 0; i < w.notes.size(); ++i) {
            std::string& n = w.notes[i];
            // The step division's notes on a cut first or last step are about the window's edges inside the
            // job, except at the job's own.
            if ((int(i) == cut.firstCutNote && !first) || (int(i) == cut.lastCutNote && !last)) continue;
            if (std::find(job.notes.begin(), job.notes.end(), n) == job.notes.end()) job.notes.push_back(std::move(n));
        }
    }

    // Slow steps that recur at a constant spacing across windows are one periodic_stall finding, as in a
    // whole analysis (a window sees too few of them to make the pattern itself).
    void periodicAcrossWindows(int minRepeats) {
        std::vector<int> starts;
        for (const Finding& f : job.findings) {
            if (f.kind == "slow_step") starts.push_back(f.firstStep);
            if (f.kind == "periodic_stall") starts.insert(starts.end(), f.occurrences.begin(), f.occurrences.end());
        }
        std::sort(starts.begin(), starts.end());
        starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
        int period = 0;
        const std::vector<std::size_t> chain = diag::periodicChain(starts, minRepeats, period);
        if (chain.empty()) return;
        std::vector<int> occurrences;
        for (std::size_t i : chain) occurrences.push_back(starts[i]);
        const auto inChain = [&](int step) { return std::binary_search(occurrences.begin(), occurrences.end(), step); };
        const auto part = [&](const Finding& f) {
            if (f.kind == "slow_step") return inChain(f.firstStep);
            return f.kind == "periodic_stall" &&
                   std::all_of(f.occurrences.begin(), f.occurrences.end(), [&](int o) { return inChain(o); });
        };
        const auto evidence = [](const Finding& f, const char* name, double otherwise) {
            for (const auto& [n, v] : f.evidence)
                if (n == name) return v;
            return otherwise;
        };
        Finding pattern;
        double extra = 0, base = 0, worst = -1;
        std::size_t parts = 0;
        for (const Finding& f : job.findings) {
            if (!part(f)) continue;
            const double usual = evidence(f, "usual_step_ms", evidence(f, "median_step_ms", 0));
            extra += f.kind == "slow_step" ? evidence(f, "step_ms", usual) - usual
                                           : evidence(f, "stall_ms_each", 0) * double(f.occurrences.size());
            parts += f.kind == "slow_step" ? 1 : f.occurrences.size();
            if (f.score > worst) {
                worst = f.score;
                pattern = f;
                base = usual;
            }
        }
        pattern.kind = "slow_step";
        pattern.evidence.erase(std::remove_if(pattern.evidence.begin(), pattern.evidence.end(),
                                              [](const auto& e) {
                                                  return e.first == "period_steps" || e.first == "occurrences" ||
                                                         e.first == "stall_ms_each";
                                              }),
                               pattern.evidence.end());
        pattern.firstStep = occurrences.front();
        pattern.lastStep = occurrences.back();
        diag::makePeriodicStall(pattern, period, occurrences, extra / double(std::max<std::size_t>(parts, 1)) * 1e6,
                                true, base * 1e6);
        job.findings.erase(std::remove_if(job.findings.begin(), job.findings.end(), part), job.findings.end());
        job.findings.push_back(std::move(pattern));
        const std::string note = diag::periodicStallNote(period);
        if (std::find(job.notes.begin(), job.notes.end(), note) == job.notes.end()) job.notes.push_back(note);
    }

    JobInfo finish(std::size_t windows, std::int64_t shortest, std::int64_t longest, int minPatternRepeats) {
        for (std::size_t i = 0; i < job.steps.size(); ++i) job.steps[i].index = int(i);
        periodicAcrossWindows(minPatternRepeats);
        std::stable_sort(job.findings.begin(), job.findings.end(),
                         [](const Finding& a, const Finding& b) { return a.score > b.score; });
        job.notes.push_back("analysed in " + std::to_string(windows) + " windows of " + formatDuration(shortest) +
                            (longest > shortest ? " to " + formatDuration(longest) : std::string()) +
                            " to stay within the memory budget (--memory): each step comes from a window that holds it whole");
        if (shapes.size() > 1) {
            std::string all;
            for (const std::string& sh : shapes) all += (all.empty() ? "" : ", ") + sh;
            job.notes.push_back("the windows disagree on the parallelism (TP x PP x DP: " + all +
                                "); the one of the window with the most steps is reported");
        }
        return std::move(job);
    }
};

} // namespace

Report analyzeStore(FlowStore& store, const Topology& topology, bool hasTopology, const AnalysisOptions& options,
                    StagedStats* stats, std::uint64_t memoryBudget, std::vector<StagedJob>* jobsOut) {
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
    std::optional<PassProgress> pass(std::in_place, store, stage(0.0, 0.15)); // the bar moves within each pass
    if (store.scanAll([&](const StoreBatch& b) {
            const FlowTable& t = b.records;
            for (std::size_t i = 0; i < t.size(); ++i)
                if (t.isRoce(i) && b.use(i)) {
                    const EndpointId src = b.global[t.src[i]], dst = b.global[t.dst[i]];
                    passes.connection(src, dst, t.srcPort[i], t.startNs[i], t.end(i));
                    if (roce.size() <= std::max(src, dst)) roce.resize(std::max(src, dst) + 1, false);
                    roce[src] = roce[dst] = true;
                }
        })) {
        passes.endConnections();
        ov = store.overview(); // a file store counted in that pass
        pass.emplace(store, stage(0.15, 0.3));
        store.scanAll([&](const StoreBatch& b) {
            const FlowTable& t = b.records;
            for (std::size_t i = 0; i < t.size(); ++i)
                if (t.isRoce(i) && b.use(i))
                    passes.record(b.global[t.src[i]], b.global[t.dst[i]], t.startNs[i], t.end(i), t.bytes[i]);
        });
        ids = store.globalEndpoints();
        pass.emplace(store, stage(0.3, 0.4));
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
    pass.reset();
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
    s.roceEndpoints = std::uint64_t(std::count(roce.begin(), roce.end(), true));
    s.topologyGiven = hasTopology;
    if (hasTopology) {
        s.hosts = topology.hosts.size();
        s.nics = topology.nics.size();
        for (EndpointId e = 0; e < roce.size(); ++e)
            s.unknownRoceEndpoints += roce[e] && !topology.nicByIp(ids->at(e));
    } else {
        s.nics = s.hosts = s.roceEndpoints;
    }
    noteDiagnostics(s, store.diagnostics());

    report.notes = recognition.notes;
    const std::size_t jobs = recognition.jobs.size();
    if (jobsOut) {
        jobsOut->clear();
        for (std::size_t j = 0; j < jobs; ++j) {
            StagedJob& sj = jobsOut->emplace_back();
            const RecognizedJob& rj = recognition.jobs[j];
            sj.job = rj;
            sj.job.records = {};
            sj.job.records.shrink_to_fit();
            auto map = [&](EndpointId e) { return sj.endpoints.intern(ids->at(e)); };
            for (EndpointId& e : sj.job.nics) e = map(e);
            for (EndpointId& e : sj.job.unknownNics) e = map(e);
            for (RecognizedJob::Node& n : sj.job.nodes) n.endpoint = map(n.endpoint);
            sj.records = expected[j];
        }
    }
    // A job that does not fit the budget is analysed in windows of time that do, each fetched with a margin of
    // an eighth of a window on both sides (so a step crossing a window's edge is whole in one). The first
    // windows' length assumes the records spread evenly; each fetch is checked against the budget.
    std::vector<std::size_t> windowsOf(jobs, 1);
    for (std::size_t j = 0; j < jobs; ++j) {
        const RecognizedJob& rj = recognition.jobs[j];
        const std::uint64_t need = expected[j] * kStagedBytesPerRecord;
        if (!memoryBudget || need <= memoryBudget) continue;
        constexpr std::size_t kMaxWindows = 4096;
        const std::uint64_t windows = (need * 5 / 4 + memoryBudget - 1) / memoryBudget + 1;
        if (windows > kMaxWindows || (rj.endNs - rj.startNs) / std::int64_t(windows) < 1'000'000)
            throw InputError({store.source(), 0, 0,
                              "job-" + std::to_string(j) + " (" + std::to_string(rj.nics.size()) + " GPUs, " +
                                  formatCount(expected[j]) + " RoCE records, " + formatTimestamp(rj.startNs) + " +" +
                                  formatDuration(rj.endNs - rj.startNs) + ") needs about " + formatBytes(need) +
                                  " to analyse, more than the memory budget of " + formatBytes(memoryBudget) +
                                  " (--memory), even window by window: analyse part of it (--from, --to) or give it "
                                  "more memory"});
        windowsOf[j] = std::size_t(windows);
    }
    // Jobs are fetched in groups that fit the budget together (one pass of a file store per group), one at a
    // time without a budget; a windowed job alone, one pass per window.
    for (std::size_t first = 0; first < jobs;) {
        if (windowsOf[first] > 1) {
            const std::size_t j = first++;
            const RecognizedJob& rj = recognition.jobs[j];
            const std::size_t windows = windowsOf[j];
            // Records need not be spread evenly in time: a window that holds more than the budget is fetched
            // again at half the length, one that holds less than half of it lets the next be longer.
            std::int64_t span = (rj.endNs - rj.startNs) / std::int64_t(windows) + 1, shortest = span, longest = span;
            // Windows follow the steps: a window keeps the steps that start at its beginning or later and end
            // by its nominal end, and the next begins where the last kept step ended, so no step is cut. Each
            // is fetched with a margin on both sides that must hold more than a step or two (the step division
            // sees partial transfers at the fetch's edges and needs a step of context): at least 2.5 of the
            // window's median step, else the window is analysed again with that margin.
            std::int64_t margin = span / 8;
            WindowMerge merge;
            std::size_t done = 0, attempts = 0;
            for (std::int64_t from = rj.startNs;;) {
                if (++attempts > 64)
                    throw InputError({store.source(), 0, 0,
                                      "job-" + std::to_string(j) + ": no window from " + formatTimestamp(from) +
                                          " holds a whole step within the memory budget of " +
                                          formatBytes(memoryBudget) + " (--memory): give it more memory"});
                margin = std::max(margin, span / 8);
                const std::int64_t to = from + span;
                const bool first = from == rj.startNs, last = to > rj.endNs;
                const std::int64_t lo = first ? std::numeric_limits<std::int64_t>::min() : from - margin;
                const std::int64_t hi = last ? std::numeric_limits<std::int64_t>::max() : to + margin;
                FlowTable records = store.roceRecords(windowOf(rj, *ids, lo, hi));
                ++st.fetches;
                if (records.size() * kStagedBytesPerRecord > memoryBudget) {
                    if (span / 2 < 1'000'000)
                        throw InputError({store.source(), 0, 0,
                                          "job-" + std::to_string(j) + " holds " + formatCount(records.size()) +
                                              " RoCE records from " + formatTimestamp(lo) + " to " +
                                              formatTimestamp(hi) + ", more than the memory budget of " +
                                              formatBytes(memoryBudget) +
                                              " (--memory) allows in one window: give it more memory"});
                    span /= 2;
                    continue;
                }
                JobInfo w;
                JobAnalysis analysed;
                if (!records.empty()) {
                    RecognizedJob job = mapped(rj, *ids, records);
                    const double f = double(from - rj.startNs) / double(std::max<std::int64_t>(1, rj.endNs - rj.startNs));
                    const double base = 0.4 + 0.6 * (double(j) + std::min(f, 1.0)) / double(jobs);
                    w = analyzeJob(records, topology, job, j, report.jobs, s.firstNs, options, true, analysed,
                                   stage(base, base));
                }
                const std::int64_t typical = medianStep(w.steps);
                if (!(first && last) && 5 * typical / 2 > margin) {
                    margin = 5 * typical / 2;
                    span = std::max(span, margin); // a window holds at least its margin
                    continue;
                }
                const std::int64_t keepFrom = first ? std::numeric_limits<std::int64_t>::min() : from - typical / 4;
                const std::int64_t keepTo = last ? std::numeric_limits<std::int64_t>::max() : to;
                std::int64_t next = to;
                for (const StepInfo& step : w.steps)
                    if (step.startNs >= keepFrom && step.endNs <= keepTo) next = step.endNs;
                if (!last && next == to && !w.steps.empty()) {
                    // No whole step in the window: long enough for the first step that starts in it (seen ending
                    // in the margin), else twice as long.
                    std::int64_t longer = 2 * span;
                    for (const StepInfo& step : w.steps)
                        if (step.startNs >= keepFrom) {
                            if (step.endNs > to) longer = step.endNs + typical / 4 - from;
                            break;
                        }
                    span = std::max(longer, span + 1);
                    continue;
                }
                st.largestJob = std::max<std::uint64_t>(st.largestJob, records.size());
                st.fetchedRecords += records.size();
                ++st.windows;
                ++done;
                attempts = 0;
                shortest = std::min(shortest, span);
                longest = std::max(longest, span);
                if (!records.empty()) merge.add(std::move(w), analysed, keepFrom, keepTo, first, last);
                if (last) break;
                from = std::max(next, from + 1);
                if (records.size() * kStagedBytesPerRecord * 2 < memoryBudget) span += span / 2;
            }
            report.jobs.push_back(merge.finish(done, shortest, longest, options.diagnosis.minPatternRepeats));
            continue;
        }
        std::size_t last = first + 1;
        std::uint64_t need = expected[first] * kStagedBytesPerRecord;
        while (memoryBudget && last < jobs && windowsOf[last] == 1 &&
               need + expected[last] * kStagedBytesPerRecord <= memoryBudget)
            need += expected[last++] * kStagedBytesPerRecord;
        std::vector<RecordSelection> selections;
        for (std::size_t j = first; j < last; ++j) selections.push_back(selectionOf(recognition.jobs[j], *ids));
        std::vector<FlowTable> tables;
        {
            const double base = 0.4 + 0.6 * double(first) / double(jobs);
            const PassProgress fetch(store, stage(base, base + 0.2 * 0.6 / double(jobs)));
            tables = store.roceRecords(selections);
        }
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

namespace {
constexpr double kWindowMarginSteps = 2.5; // analyzeJobWindow's margin on each side, in median steps
}

std::pair<int, int> windowSteps(const JobInfo& info, const StagedJob& job, int from, std::uint64_t memoryBudget) {
    const int n = int(info.steps.size());
    if (n == 0) return {0, -1};
    if (!memoryBudget) return {0, n - 1};
    // Records spread over time rather than over steps (a slow step lasts longer and holds more): the window's
    // records are estimated from its time, its margins included, against 80% of the budget.
    const std::int64_t median = medianStep(info.steps);
    const double perNs = double(job.records) / double(std::max<std::int64_t>(1, info.endNs - info.startNs));
    const double most = 0.8 * double(memoryBudget) / double(kStagedBytesPerRecord);
    const auto fits = [&](int a, int b) {
        return (double(info.steps[std::size_t(b)].endNs - info.steps[std::size_t(a)].startNs) +
                   2 * kWindowMarginSteps * double(median)) * perNs <= most;
    };
    int first = std::clamp(from, 0, n - 1), last = first;
    while (last + 1 < n && fits(first, last + 1)) ++last;
    while (last == n - 1 && first > 0 && fits(first - 1, last)) --first; // at the end: as many steps as fit
    return {first, last};
}

JobWindow analyzeJobWindow(FlowStore& store, const Topology& topology, const Report& report,
                           const std::vector<StagedJob>& jobs, std::size_t j, int firstStep, int lastStep,
                           const AnalysisOptions& options, std::uint64_t memoryBudget) {
    if (j >= jobs.size() || j >= report.jobs.size())
        throw std::out_of_range("analyzeJobWindow: no job " + std::to_string(j));
    const StagedJob& sj = jobs[j];
    const JobInfo& staged = report.jobs[j];
    const std::vector<StepInfo>& steps = staged.steps;
    JobWindow w;
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    w.fromNs = lo;
    w.toNs = hi;
    if (!steps.empty()) {
        firstStep = std::clamp(firstStep, 0, int(steps.size()) - 1);
        lastStep = std::clamp(lastStep, firstStep, int(steps.size()) - 1);
        const std::int64_t median = medianStep(steps);
        // The job's own edges stay open, so that the window sees them as a whole analysis does.
        // A margin of 2.5 median steps on each side, as analyzeStore's windows have (the step division sees
        // partial transfers at a fetch's edges and needs a step or two of context).
        const std::int64_t margin = std::int64_t(kWindowMarginSteps * double(median));
        if (firstStep > 0) w.fromNs = steps[std::size_t(firstStep)].startNs - margin;
        if (lastStep + 1 < int(steps.size())) w.toNs = steps[std::size_t(lastStep)].endNs + margin;
        w.firstStep = firstStep;
        w.lastStep = lastStep;
    }
    // The fetch is the first half of the bar, the window's analysis the second.
    auto half = [&](double lo) -> std::function<bool(double)> {
        if (!options.progress) return {};
        return [&options, lo](double f) { return options.progress(lo + 0.5 * f); };
    };
    {
        const PassProgress fetch(store, half(0.0));
        w.records = store.roceRecords(windowOf(sj.job, sj.endpoints, w.fromNs, w.toNs));
    }
    if (memoryBudget && w.records.size() * kStagedBytesPerRecord > memoryBudget)
        throw InputError({store.source(), 0, 0,
                          staged.id + " holds " + formatCount(w.records.size()) + " RoCE records in steps " +
                              std::to_string(firstStep) + " to " + std::to_string(lastStep) +
                              ", more than the memory budget of " + formatBytes(memoryBudget) +
                              " (--memory) allows: fewer steps, or more memory"});
    w.job = mapped(sj.job, sj.endpoints, w.records);
    const std::vector<JobInfo> earlier(report.jobs.begin(), report.jobs.begin() + std::ptrdiff_t(j));
    const std::int64_t firstNs = report.capture ? report.capture->firstNs : 0;
    w.info = analyzeJob(w.records, topology, w.job, j, earlier, firstNs, options, false, w.analysed, half(0.5));
    // Notes on a cut first or last step are about the window's edges inside the job, not the capture's.
    std::vector<int> drop;
    if (w.fromNs != lo && w.analysed.firstCutNote >= 0) drop.push_back(w.analysed.firstCutNote);
    if (w.toNs != hi && w.analysed.lastCutNote >= 0) drop.push_back(w.analysed.lastCutNote);
    std::sort(drop.rbegin(), drop.rend());
    for (int i : drop) w.info.notes.erase(w.info.notes.begin() + i);
    if (!drop.empty()) w.analysed.firstCutNote = w.analysed.lastCutNote = -1;
    // Steps numbered as the staged report numbers them: each window step takes the index of the staged step that
    // starts nearest it; findings follow.
    std::map<int, int> global;
    for (StepInfo& st : w.info.steps) {
        int best = st.index;
        std::int64_t bestGap = hi;
        auto it = std::lower_bound(steps.begin(), steps.end(), st.startNs,
                                   [](const StepInfo& s, std::int64_t t) { return s.startNs < t; });
        for (auto c : {it, it == steps.begin() ? it : it - 1})
            if (c != steps.end() && std::llabs(c->startNs - st.startNs) < bestGap) {
                bestGap = std::llabs(c->startNs - st.startNs);
                best = c->index;
            }
        global[st.index] = best;
        st.index = best;
    }
    const auto map = [&](int i) {
        auto it = global.find(i);
        return it == global.end() ? i : it->second;
    };
    for (StepInfo& st : w.analysed.timeline.steps) st.index = map(st.index);
    for (Finding& f : w.info.findings) {
        f.firstStep = map(f.firstStep);
        f.lastStep = map(f.lastStep);
        for (int& o : f.occurrences) o = map(o);
    }
    return w;
}

} // namespace prism
