#pragma once
// One segment of a rank's timeline (analysis/timeline.h): a transfer, or the compute or waiting between two.
#include <cstdint>

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

inline constexpr std::uint32_t kNoIndex = 0xFFFFFFFFu;
inline constexpr std::uint16_t kNoMicroBatch = 0xFFFFu;

struct Segment {
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
    SegmentKind kind = SegmentKind::Compute;
    std::uint16_t microBatch = kNoMicroBatch; // PP: n-th transfer of this kind with this peer in the step
    std::uint32_t peer = kNoIndex;            // index of the peer rank in JobTimeline::ranks, or none
    std::uint64_t bytes = 0;
    // (Its step is JobTimeline::stepAt(startNs): not held, a timeline holds millions of segments.)
};
static_assert(sizeof(Segment) == 32);

} // namespace prism
