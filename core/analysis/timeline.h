#pragma once
// Stage 4: the per-rank timeline the Gantt view draws. One row per rank (NIC), its segments sorted by
// start; queries by (rank, time range) are binary searches, so a view can ask for what is visible cheaply.
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "model/report.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prism {

enum class SegmentKind : std::uint8_t {
    Compute, // between transfers: the GPU computes
    PpSend,  // pipeline transfer sent to the peer rank (activation forward or gradient backward)
    PpRecv,  // pipeline transfer received from the peer rank
    DpSync,  // data-parallel gradient synchronization
    Wait,    // idle: waiting for a peer (the rank is ready, its peer is not)
    Other,   // RoCE traffic of the job that is neither DP nor PP
};
const char* segmentKindName(SegmentKind kind);

struct Segment {
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
    SegmentKind kind = SegmentKind::Compute;
    std::uint32_t peer = 0xFFFFFFFFu; // index of the peer rank in JobTimeline::ranks, or none
    std::uint32_t step = 0xFFFFFFFFu; // index into JobTimeline::steps, or none
    std::uint64_t bytes = 0;
};

struct RankTimeline {
    EndpointId nic = 0;
    std::string ip;
    std::string label; // host:gpu
    int stage = 0;     // PP stage (0 when pp = 1)
    int dpGroup = 0;   // index into ParallelismResult::dpGroups
    std::vector<Segment> segments; // sorted by start, non-overlapping within one rank
    std::int64_t maxSegmentNs = 0; // longest segment: bounds the backward search of a range query
};

struct JobTimeline {
    std::vector<RankTimeline> ranks; // ordered by PP stage, then DP group, then NIC order
    std::vector<StepInfo> steps;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;

    // Indices [first, last) of the segments of `rank` that intersect [t0, t1).
    std::pair<std::size_t, std::size_t> visible(std::size_t rank, std::int64_t t0, std::int64_t t1) const;
    // Index of the step containing t, or -1.
    int stepAt(std::int64_t t) const;
    std::size_t segmentCount() const;
};

JobTimeline buildTimeline(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                          const ParallelismResult& parallelism, const std::vector<StepInfo>& steps);

} // namespace prism
