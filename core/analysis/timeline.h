#pragma once
// Stage 4: the per-rank timeline the Gantt view draws. One row per rank (NIC), its segments sorted by
// start; queries by (rank, time range) are binary searches, so a view can ask for what is visible cheaply.
//
// Segments come from the job's records, in the clock-aligned time of the step division: the channels of
// one transfer are merged; PP transfers carry their micro-batch (the n-th transfer of that kind to that peer
// in the step). Between transfers a rank either computes or waits: it is busy from the moment its inputs are
// there (the later of its previous output and its last receive) until it sends the result; the rest of a
// gap is waiting. Before a DP sync, the member of the DP group with the shortest gap sets the compute time
// (a ring starts when its last member is ready); the others waited for it.
#include "analysis/packed_segments.h"
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "analysis/segment.h"
#include "model/report.h"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace prism {

struct StepDivision;
class JobIndex;

// One rank in one step. Times in ns; "none" is kNoTime.
struct RankStepStats {
    static constexpr std::int64_t kNoTime = INT64_MIN;
    std::int64_t computeNs = 0, waitNs = 0, ppSendNs = 0, ppRecvNs = 0, dpSyncNs = 0, otherNs = 0;
    std::uint32_t ppSends = 0, ppRecvs = 0; // transfers (channels merged)
    std::int64_t dpStartNs = kNoTime;       // first DP sync transfer of the rank in the step
    std::int64_t dpEndNs = kNoTime;         // last DP sync transfer end
    std::int64_t dpStartLagNs = 0;          // dpStartNs minus the earliest dpStartNs of its DP group
    // Time the rank was ready for its DP sync before it began: its gap before the sync less the shortest gap of
    // its group (the last member ready computed that long; the others waited the rest for it).
    std::int64_t dpWaitNs = 0;
    // Busy time before the PP sends to the next stage (forward) and to the previous stage (backward), summed
    // over the step: the compute of its micro-batches as the network sees it, from the moment the op's input
    // was there (waiting excluded). Samples: the sends whose op start was known.
    std::int64_t forwardComputeNs = 0, backwardComputeNs = 0;
    std::uint32_t forwardSamples = 0, backwardSamples = 0;
    // Stage 0's warm-up forwards (before its first gradient: a forward alone, where its later forwards follow a
    // backward), apart from forwardComputeNs; ranks are judged on all three, a stage's time a micro-batch on the rest.
    std::int64_t warmupComputeNs = 0;
    std::uint32_t warmupSamples = 0;
    // The first forward samples of the step, as many as the pipeline has stages less one (of forwardComputeNs):
    // what a ring's stage 0, sampled on its warm-up forwards only, is measured against (diagnosis.cpp).
    std::int64_t earlyForwardNs = 0;
    std::uint32_t earlyForwardSamples = 0;
};

struct RankTimeline {
    EndpointId nic = 0;
    std::string ip;
    std::string label; // host:gpu
    int stage = 0;     // PP stage (0 when pp = 1)
    int dpGroup = 0;   // index into ParallelismResult::dpGroups
    int host = -1;     // topology host index, -1 when unknown
    std::vector<Segment> segments; // sorted by start, non-overlapping within one rank (empty when packed)
    PackedSegments packed;         // or the same packed (AnalysisOptions::packSegments, the GUI's): one of the two
    std::int64_t maxSegmentNs = 0; // longest segment: bounds the backward search of a range query
    std::vector<RankStepStats> stepStats; // one per JobTimeline::steps entry

    // The segments whichever way they are held.
    std::size_t segmentCount() const { return segments.size() + packed.size(); }
    Segment segment(std::size_t i) const { return packed.empty() ? segments.at(i) : packed.at(i); }
    // fn(segment) for every segment in order, whichever way they are held (none unpacked at once).
    template <typename Fn>
    void forEachSegment(Fn&& fn) const {
        if (packed.empty())
            for (const Segment& s : segments) fn(s);
        else packed.forEach(fn);
    }
    // The segments that intersect [t0, t1) (JobTimeline::visible), from `segments` or decoded into `scratch`; the
    // index of the first in `*first` when asked.
    std::span<const Segment> visibleSegments(std::int64_t t0, std::int64_t t1, std::vector<Segment>& scratch,
                                             std::size_t* first = nullptr) const;
};

// The step of each segment of a rank in turn, the segments by start: JobTimeline::stepAt, walked instead of
// searched (the timeline's statistics, a session's step column).
class StepWalk {
public:
    explicit StepWalk(const std::vector<StepInfo>& steps) : m_steps(steps) {}
    std::uint32_t next(std::int64_t startNs) { // index into `steps`, or kNoIndex
        while (m_at < m_steps.size() && startNs >= m_steps[m_at].endNs) ++m_at;
        return m_at < m_steps.size() && startNs >= m_steps[m_at].startNs ? std::uint32_t(m_at) : kNoIndex;
    }

private:
    const std::vector<StepInfo>& m_steps;
    std::size_t m_at = 0;
};

struct JobTimeline {
    std::vector<RankTimeline> ranks; // ordered by PP stage, then DP group, then NIC order
    std::vector<StepInfo> steps;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;

    // Indices [first, last) of the segments of `rank` that intersect [t0, t1) (of RankTimeline::segments: a packed
    // rank's are found by RankTimeline::visibleSegments).
    std::pair<std::size_t, std::size_t> visible(std::size_t rank, std::int64_t t0, std::int64_t t1) const;
    // Index of the step containing t, or -1.
    int stepAt(std::int64_t t) const;
    std::size_t segmentCount() const;
    // PP stages among the ranks (1 + the largest stage; 0 without ranks).
    int stageCount() const;
    // Rank index of a NIC address, or -1.
    int rankOf(const std::string& ip) const;
    // Stats of (rank, step), or nullptr when out of range.
    const RankStepStats* stats(std::size_t rank, std::size_t step) const;
};

// Times as recorded (no clock alignment).
JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& parallelism, const std::vector<StepInfo>& steps);
// In the aligned time of a step division (its steps and clock offsets). `pack`: each rank's segments packed as
// they are made (RankTimeline::packed), never all held at 32 bytes each. `blockRanks`: the ranks whose transfers
// are held at once (0: an eighth of them, at least 64; blocks end between DP groups only); the timeline is the
// same for any.
JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& parallelism, const StepDivision& division,
                          const JobIndex* index = nullptr, bool pack = false, std::size_t blockRanks = 0);
// The ranks and their step statistics without segments (compute, waiting and the per-kind times are 0): what
// diagnosis needs, for a report-only analysis, at a fraction of the time and memory. `threads`: 0 for one per
// core (at most 8); the statistics are the same for any count.
JobTimeline buildTimelineStats(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                               const ParallelismResult& parallelism, const StepDivision& division,
                               const JobIndex* index = nullptr, unsigned threads = 0);

} // namespace prism
