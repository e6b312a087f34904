#pragma once
// The analysis pipeline: a capture in, a report out (docs/ENGINE.md stages 1-5: jobs, parallelism, steps, timeline,
// diagnosis). Each stage is a pure function of its inputs so it
// can be tested alone and run in a worker thread; progress and cancellation go through a callback.
#include "analysis/diagnosis.h"
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "analysis/steps.h"
#include "analysis/timeline.h"
#include "model/capture.h"
#include "model/report.h"

#include <functional>
#include <optional>
#include <vector>

namespace prism {

struct AnalysisOptions {
    RecognitionParams recognition;
    ParallelismParams parallelism;
    StepParams steps;
    DiagnosisParams diagnosis;
    // Called with a fraction in [0,1]; return false to cancel (the analysis throws Cancelled).
    std::function<bool(double)> progress;
    // The timelines' segments packed as they are made (RankTimeline::packed): what a view that holds them for as
    // long as a job is open wants (the GUI: about a quarter of the memory). Reports are the same either way.
    bool packSegments = false;
};

// What stages 2-4 produced for one recognized job, beside its entry in the report.
struct JobAnalysis {
    ParallelismResult parallelism;
    std::optional<StepDivision> division; // boundaries, clock offsets, BOCD changes; none: saved without them
    JobTimeline timeline;                 // empty when not read (OpenOptions::timelines)
    // Indices in the job entry's notes of the step division's notes on a cut first / last step, -1 when none
    // (StepDivision::firstCutNote; set by analyzeJob even when the division is not kept).
    int firstCutNote = -1, lastCutNote = -1;
};

// Everything the stages produced, for views that need more than the report.
struct Analysis {
    Report report;
    RecognitionResult recognition;
    std::vector<JobAnalysis> jobs; // one per recognized job, same order as report.jobs
};

// Stages 2-5 for one recognized job whose records are in `flows`: its entry in the report (id "job-J"), and in
// `analysed` what the stages produced (the timeline only when !reportOnly). `earlier`: the report's jobs before
// it (a restart names one); `firstNs`: the capture's first record. `progress` goes from 0 to 1 over the job.
// `portsRead` (optional) is called once the job's slow links and timeline are done: after it no stage of the
// job reads the records' source ports.
JobInfo analyzeJob(const FlowTable& flows, const Topology& topology, const RecognizedJob& job, std::size_t j,
                   const std::vector<JobInfo>& earlier, std::int64_t firstNs, const AnalysisOptions& options,
                   bool reportOnly, JobAnalysis& analysed, const std::function<bool(double)>& progress = {},
                   const std::function<void()>& portsRead = {});

Analysis runAnalysis(const Capture& capture, const AnalysisOptions& options = {});
// The same analysis, letting go of what it is done with as analyzeCaptureReleasing does (below): for a caller
// that keeps the analysis and reads the flows again to save them (the GUI). Each job's record list comes back
// packed (RecognizedJob::records empty; forEachRecord and listed() read it).
Analysis runAnalysisReleasing(Capture& capture, const AnalysisOptions& options = {});
// Runs every stage on a loaded capture. The report always carries the capture summary.
Report analyzeCapture(const Capture& capture, const AnalysisOptions& options = {});
// The same report, for a caller that needs the report alone (llmprism-cli analyze): once recognition and the
// summary have read the records, the columns only they read are freed — destination ports, protocols and
// packet counts, 7 of the table's 25 bytes a record (11 where packet counts are wide; docs/ENGINE.md) — and the
// source ports once the last job's slow links are found. The table is left with those columns empty: only its
// metadata (source, paths, diagnostics) and its times, endpoints and byte counts remain of use.
Report analyzeCaptureReleasing(Capture& capture, const AnalysisOptions& options = {});

} // namespace prism
