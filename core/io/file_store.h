#pragma once
// A capture on disk as a FlowStore (model/flow_store.h): every answer is a streaming pass over the flow files,
// so that a capture larger than memory is analysed in stages (analysis/staged.h; docs/ENGINE.md "Staged
// analysis"). flows.csv files (plain or gzip) are streamed in batches; other kinds of flow data are read one
// file at a time. Passes: recognition's three (the counts and the span histogram ride on the first), then one
// per group of jobs fetched (the time resolution's exact values ride on the first). Messages and warnings are those
// loadCapture gives, taken from the first pass.
//
// The first pass also indexes each file by the start times of its records: each file's first and last start, and for
// a plain flows.csv those of each read chunk (about 4 MiB) with its byte offset and line. A later pass that wants
// only some starts (a window of steps, --from/--to) skips the files none of whose records start in it and reads
// only the chunks of a plain flows.csv from the first to the last that hold such starts (rows in any order are
// read where they are: the index holds each chunk's earliest and latest start). A file changed since (size or
// modification time) is read whole again.
#include "io/flow_source.h"
#include "model/flow_store.h"

#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace prism {

// Memory this process may use: MemAvailable, or the cgroup's limit when lower; 0 when unknown.
std::uint64_t availableMemory();
// What reading a capture whole and analysing it takes, from the size of its flow files: about its plain text
// size (measured: ~85 B per record of ~87 B of flows.csv, docs/BENCHMARKS.md), six times a .gz file's.
std::uint64_t wholeLoadEstimate(const CaptureFiles& files);
// The records a whole load may hold: 90% of the memory available at ~90 B each (0: unknown, no limit).
std::uint64_t maxRecordsInMemory();

class FileStore : public FlowStore {
public:
    // Finds the files as loadCapture does and reads the topology (InputError as loadCapture).
    FileStore(const std::vector<std::string>& sources, const LoadOptions& options);
    // The files already found (findCaptureFiles with the same options), so that they are not looked for twice.
    struct Found {};
    FileStore(Found, CaptureFiles files, const LoadOptions& options);
    ~FileStore() override;

    const CaptureFiles& files() const { return m_files; }
    const Topology& topology() const { return m_topology; }
    bool hasTopology() const { return m_hasTopology; }
    int passes() const { return m_passes; } // over the flow files so far
    std::uint64_t recordsRead() const { return m_recordsRead; } // by every pass so far
    // Whether later passes use the index of the files by time (on by default; off reads every pass whole, as
    // before the index: for comparison, bench/bench_window.cpp).
    void setTimeIndex(bool on) { m_useIndex = on; }

    std::string source() const override { return m_files.source; }
    StoreOverview overview() override;
    FlowTable groupedRoce(std::int64_t lo, std::int64_t width) override;
    FlowTable roceRecords(const RecordSelection& selection) override;
    std::vector<FlowTable> roceRecords(const std::vector<RecordSelection>& selections) override; // one pass
    TimeResolution resolution() override;
    bool scanAll(const std::function<void(const StoreBatch&)>& batch) override;
    const EndpointTable* globalEndpoints() const override { return &m_global; }
    const LoadDiagnostics& diagnostics() const override { return m_diag; }

    struct SpanHistogram; // the record durations, for an exact median in bounded memory
    struct FileIndex;     // a file's record starts, by chunk
    struct OverviewPass;
    struct ResolutionPass;

private:
    void startOverview();
    void finishOverview();
    // Calls `batch` with every record of every flow file, in batches: (batch, file index); the endpoint ids
    // of a batch stay valid for the rest of its file (in this pass). Files and chunks that the index shows to
    // hold no record starting in [lo, hi) may be left out.
    void scan(const std::function<void(const FlowTable&, std::size_t)>& batch,
              std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
              std::int64_t hi = std::numeric_limits<std::int64_t>::max());
    // --from, --to
    bool inWindow(std::int64_t start) const { return start >= m_options.fromNs && start < m_options.toNs; }

    CaptureFiles m_files;
    LoadOptions m_options;
    Topology m_topology;
    bool m_hasTopology = false;
    LoadDiagnostics m_diag;
    EndpointTable m_global; // scanAll's ids
    bool m_scanned = false; // the first pass is over: its messages are kept, later passes' dropped
    int m_passes = 0;
    std::uint64_t m_recordsRead = 0;
    bool m_useIndex = true;
    std::vector<FileIndex> m_index;         // per file of m_files
    std::unique_ptr<SpanHistogram> m_spans; // from overview()
    std::unique_ptr<OverviewPass> m_overviewPass;
    std::optional<StoreOverview> m_overview;
    std::optional<TimeResolution> m_resolution;
    bool m_anyRoce = false;
    std::int64_t m_granularity[2] = {1'000'000'000, 1'000'000'000}; // over all records, over RoCE records
};

} // namespace prism
