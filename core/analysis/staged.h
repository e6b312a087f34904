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

// `hasTopology`: whether `topology` came from a file (else each RoCE endpoint counts as a NIC and host).
// `memoryBudget` (bytes, 0: none): a job whose records would take more than it to analyse
// (kStagedBytesPerRecord each) is analysed window by window (windows of time that fit, each fetched with a margin
// so a step crossing its edge is whole in one; steps, findings and notes merged into one job entry, which notes
// it); where even 4096 windows or a window's actual records would not fit: InputError naming the job, what it
// needs and what to do. Jobs that fit the budget together are fetched together (one pass over a file store);
// without a budget, one by one.
Report analyzeStore(FlowStore& store, const Topology& topology, bool hasTopology, const AnalysisOptions& options = {},
                    StagedStats* stats = nullptr, std::uint64_t memoryBudget = 0);

} // namespace prism
