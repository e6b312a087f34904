#pragma once
// Stage 1: job recognition. Union-find over RoCE flow endpoints gives cross-machine clusters (one per
// rail for a rail-optimized job, since TP traffic never reaches the network); clusters of one job are
// merged when their host sets overlap (Jaccard) AND they share one step rhythm (two jobs on the same
// hosts with disjoint GPUs have identical host sets but do not step together).
// Job identity comes from connections, not silences: a connection is (src, dst, UDP source port) — one QP
// of RoCEv2, whose source port stays fixed for the QP's life. An endpoint starts a new epoch (and so may
// belong to a new job) when a connection opens while fewer than half of the connections of its current
// epoch are still alive (seen again later): a restart opens new QPs after the old ones are gone, while a
// job resuming after a pause of any length (checkpoint, evaluation, stall) keeps its QPs. No time scale is
// assumed anywhere.
#include "model/flow_table.h"
#include "model/topology.h"
#include "util/memory.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace prism {

struct RecognitionParams {
    double jaccardThreshold = 0.5; // host-set similarity needed to merge two clusters
    double rhythmThreshold = 0.5;  // correlation of binned traffic needed to merge two clusters
    std::size_t rhythmBins = 1 << 18;        // at most this many bins of traffic over the whole capture...
    std::int64_t minRhythmBinNs = 500'000;   // ...each at least this wide (clock skew must not decorrelate)
};

struct RecognizedJob {
    std::vector<EndpointId> nics; // endpoints of the job, ordered by (host, GPU) where known
    std::vector<int> hosts;       // topology host indices (sorted); unknown endpoints are not listed
    std::vector<EndpointId> unknownNics; // endpoints of the job that the topology does not know, by address
    // NICs of the job's hosts (topology) that are in no job of the capture: no RoCE traffic at all. Derived from
    // the jobs (noteIdleNics), not saved. A DP ring passing GPUs over NVLink leaves theirs so (parallelism.h).
    std::vector<IpAddr> idleNics;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
    // Indices of the job's RoCE records in the FlowTable, by start time (empty from RecognitionPasses, or once
    // packed). Unset when sized: recognition fills a job's list in parts side by side, its pages faulted in there
    // (zeroed first, 25 MB on `large`, they were faulted in on one core).
    std::vector<std::uint32_t, UnsetAllocator<std::uint32_t>> records;
    std::uint64_t recordCount = 0;      // the job's RoCE records (records.size() when they are listed)
    // The list packed, once its job is analysed, by an analysis that is kept (the GUI's, runAnalysisReleasing):
    // the differences of successive indices, zig-zagged, as LEB128 varints (1 or 2 bytes a record where the list
    // takes 4; the encoding of a session's job_records, "delta-zigzag-varint"). Empty unless packed.
    std::string packedRecords;
    std::size_t packedCount = 0;
    void packRecords();                              // records -> packedRecords (records freed)
    void unpackRecords();                            // and back
    std::size_t listed() const { return packedRecords.empty() ? records.size() : packedCount; }
    template <typename Fn>
    void forEachRecord(Fn&& fn) const; // fn(index) for each listed record in order, packed or not
    int clusters = 0;                   // cross-machine clusters merged into this job
    int restartOf = -1; // index in RecognitionResult::jobs of the job this one restarted (same NICs, new
                        // connections, after it ended), -1 when none
    std::uint64_t bytes = 0;
    // The job's (endpoint, epoch) nodes: a RoCE record belongs to the job when its sender and start fall in one
    // of them (start in [from, to)). A staged analysis fetches the job's records by them (staged.h).
    struct Node {
        EndpointId endpoint;
        std::int64_t from, to;
    };
    std::vector<Node> nodes;
};

// Decodes what packRecords wrote (a list it packed: no bounds to check): the next difference, modulo 2^64.
inline std::uint64_t unpackRecordDelta(const std::uint8_t*& p) {
    std::uint64_t v = *p & 0x7f;
    for (int shift = 7; *p++ & 0x80; shift += 7) v |= std::uint64_t(*p & 0x7f) << shift;
    return (v >> 1) ^ (0 - (v & 1)); // zig-zag undone
}

template <typename Fn>
void RecognizedJob::forEachRecord(Fn&& fn) const {
    if (packedRecords.empty()) {
        for (std::uint32_t r : records) fn(r);
        return;
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(packedRecords.data());
    std::uint64_t at = 0;
    for (std::size_t k = 0; k < packedCount; ++k) {
        at += unpackRecordDelta(p);
        fn(std::uint32_t(at));
    }
}

struct RecognitionResult {
    std::vector<RecognizedJob> jobs; // ordered by start time, then first NIC
    std::vector<std::string> notes;
};

// Fills each job's idleNics: the NICs of its hosts that belong to no job of `result`.
void noteIdleNics(RecognitionResult& result, const EndpointTable& endpoints, const Topology& topology);

// The width of the bins of the traffic series compared for merging, for RoCE records from lo to hi: the
// same on every store, so that records grouped by these bins are recognized as the records themselves.
std::int64_t rhythmBinWidth(std::int64_t lo, std::int64_t hi, const RecognitionParams& params);

// Recognition over records given in passes, in any order (a capture streamed batch by batch: io/file_store.h):
// the jobs recognizeJobs finds in the same records, holding only the connections, the (endpoint, epoch) nodes
// and the series of clusters that may merge. Endpoint ids are the caller's, of one table for all passes.
//   1. connection() for every RoCE record, then endConnections();
//   2. record() for every RoCE record (it gives the record's sender node), then endGraph(endpoints);
//   3. when endGraph() said so, series() for every RoCE record (with its sender node: senderNode());
//   then result(endpoints): the jobs with their nodes and record counts, without record lists.
class RecognitionPasses {
public:
    explicit RecognitionPasses(const Topology& topology, const RecognitionParams& params = {});
    ~RecognitionPasses();
    void connection(EndpointId src, EndpointId dst, std::uint16_t port, std::int64_t start, std::int64_t end);
    void endConnections();
    std::uint32_t record(EndpointId src, EndpointId dst, std::int64_t start, std::int64_t end, std::uint64_t bytes);
    bool endGraph(const EndpointTable& endpoints); // true: pass 3 is needed
    std::uint32_t senderNode(EndpointId src, std::int64_t start) const;
    // Adds the record to its cluster's series when the cluster may merge (nothing otherwise).
    void series(std::uint32_t senderNode, std::int64_t start, std::uint64_t bytes);
    // `jobOfNode` (optional): per node, its job's index in the result (~0u for nodes without records).
    RecognitionResult result(const EndpointTable& endpoints, std::vector<std::uint32_t>* jobOfNode = nullptr);

private:
    struct State;
    std::unique_ptr<State> m;
    friend RecognitionResult recognizeJobs(const FlowTable&, const Topology&, const RecognitionParams&,
                                           const std::function<bool(double)>&, unsigned);
};

// The passes over a table's records, on `threads` threads (0: one per core); the result is the same whatever
// the thread count.
RecognitionResult recognizeJobs(const FlowTable& flows, const Topology& topology, const RecognitionParams& params = {},
                                const std::function<bool(double)>& progress = {}, unsigned threads = 0);

} // namespace prism
