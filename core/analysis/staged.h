#pragma once
// Staged analysis (docs/ENGINE.md "Staged analysis"): a store's records are never held whole. Recognition runs
// on the RoCE records grouped by connection and by the bins of its traffic series (one row per group, far fewer
// than the records where records are fine-grained in time); then each job's records are fetched by its
// (sender, epoch) nodes, analysed and let go before the next. The report is the one analyzeCapture() gives for
// the same records: the groups keep every figure recognition uses (a connection's first start and last end,
// bytes per bin), except where an endpoint's epoch begins inside a bin a connection was active in.
#include "analysis/pipeline.h"
#include "model/flow_store.h"

namespace prism {

// What analysing one job's records takes, per record, on top of nothing else: the table (45 B) and the
// stages' working sets (measured on long-run and large: docs/BENCHMARKS.md "Staged analysis").
inline constexpr std::uint64_t kStagedBytesPerRecord = 120;

struct StagedStats {
    std::uint64_t groupedRows = 0;   // rows recognition ran on
    std::uint64_t largestJob = 0;    // records of the largest job fetched
    std::uint64_t fetchedRecords = 0; // records of every job fetched
    std::uint64_t fetches = 0;        // calls for job records (passes of a file store)
    std::uint64_t windows = 0;        // windows of jobs analysed window by window
};

// A job of a staged analysis as the store is asked for it again later: its recognition (endpoint ids of
// `endpoints`, which holds only the job's addresses; no record list) and its RoCE records.
struct StagedJob {
    RecognizedJob job;
    EndpointTable endpoints;
    std::uint64_t records = 0;
};

// `hasTopology`: whether `topology` came from a file (else each RoCE endpoint counts as a NIC and host).
// `memoryBudget` (bytes, 0: none): a job whose records would take more than it to analyse
// (kStagedBytesPerRecord each) is analysed window by window (windows of time that fit, each fetched with a margin
// so a step crossing its edge is whole in one; steps, findings and notes merged into one job entry, which notes
// it); where even 4096 windows or a window's actual records would not fit: InputError naming the job, what it
// needs and what to do. Jobs that fit the budget together are fetched together (one pass over a file store);
// without a budget, one by one.
// `jobs` (when given) receives one StagedJob per report job, to fetch a window of one later (analyzeJobWindow).
Report analyzeStore(FlowStore& store, const Topology& topology, bool hasTopology, const AnalysisOptions& options = {},
                    StagedStats* stats = nullptr, std::uint64_t memoryBudget = 0,
                    std::vector<StagedJob>* jobs = nullptr);

// Steps [first, last] of a staged job entry (`info`, the report's) that one window holds within `memoryBudget`
// (bytes, 0: no limit; kStagedBytesPerRecord a record, the job's records assumed spread evenly in time, 2.5 median
// steps of margin on each side, 80% of the budget), starting at `from` (clamped; a window that reaches the last step is
// moved back to hold as many steps as fit). A job without steps: {0, -1}.
std::pair<int, int> windowSteps(const JobInfo& info, const StagedJob& job, int from, std::uint64_t memoryBudget);

// One window of a staged job, analysed with its timeline: what a view shows of a job too large to hold whole.
struct JobWindow {
    FlowTable records;   // the job's RoCE records from `fromNs` to `toNs`
    RecognizedJob job;   // the job, endpoint ids of `records`
    JobInfo info;        // the window's entry: steps numbered as in the staged report, findings of the window
    JobAnalysis analysed; // parallelism, step division, timeline of the window
    int firstStep = 0, lastStep = -1; // the staged steps asked for
    std::int64_t fromNs = 0, toNs = 0; // the records fetched: the steps and their margins
};

// Fetches steps [firstStep, lastStep] of job `j` of a staged analysis (`report`, `jobs` from analyzeStore on the
// same store) with a margin of 2.5 median steps on each side, and analyses them as analyzeJob does a whole job.
// The window's steps are numbered as the staged report's (the one starting nearest); its findings are the
// window's own. InputError when the window holds more records than `memoryBudget` (0: no limit) allows.
JobWindow analyzeJobWindow(FlowStore& store, const Topology& topology, const Report& report,
                           const std::vector<StagedJob>& jobs, std::size_t j, int firstStep, int lastStep,
                           const AnalysisOptions& options = {}, std::uint64_t memoryBudget = 0);

} // namespace prism
