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

struct StagedStats {
    std::uint64_t groupedRows = 0;   // rows recognition ran on
    std::uint64_t largestJob = 0;    // records of the largest job fetched
    std::uint64_t fetchedRecords = 0; // records of every job fetched
};

// `hasTopology`: whether `topology` came from a file (else each RoCE endpoint counts as a NIC and host).
Report analyzeStore(FlowStore& store, const Topology& topology, bool hasTopology, const AnalysisOptions& options = {},
                    StagedStats* stats = nullptr);

} // namespace prism
