#pragma once
// Stage 2: parallelism inference for one recognized job. Each communicating NIC pair is classified DP or
// PP from its signature; DP groups are the connected components of DP pairs (Boost.Graph); PP pairs are
// oriented (the forward direction is the one that speaks first after each step's silence; the pairs of one
// pipeline, a path, are oriented together by the sum of their scores; without DP traffic, by where the
// pipeline drains taken either way round, drains.h scanDrains, when that is clear) and chained by DFS on
// the directed PP graph, stage 0 first; TP = job GPUs / (DP × PP), cross-checked against the GPUs
// the job uses per host. What happens inside a host never reaches the network, so intra-host parallelism
// is reported as TP (the paper's convention) and a note says so.
#include "analysis/recognition.h"

#include <string>
#include <vector>

namespace prism {

struct ParallelismParams {
    double asymmetryThreshold = 0.2;    // min/max bytes of the two directions below this: one-way ring → DP
    double simultaneityThreshold = 0.7; // share of transfers starting with one the other way above this → DP
    std::int64_t overlapToleranceNs = 50'000; // clock skew allowance when comparing start times
    double boundaryGapFactor = 3.0;     // a silence this many times the median gap on a pair is a step boundary
    std::size_t windowRecords = 1 << 20; // records of the job's middle read for the signatures (0 = all)
    std::int64_t exchangeWindowNs = 20'000; // a member's sends of one expert all-to-all start this close
    unsigned threads = 0; // for the passes over the window's records (0: one per core); the same result on any
};

enum class PairKind { DP, PP };

struct PairInfo {
    EndpointId a = 0, b = 0; // a < b
    PairKind kind = PairKind::PP;
    std::uint64_t bytesAB = 0, bytesBA = 0;
    std::uint32_t recordsAB = 0, recordsBA = 0;
    double asymmetry = 0;    // min/max of the byte counts of the two directions (1 = symmetric)
    double simultaneity = 0; // share of transfers that start together with one in the reverse direction
    int forwardVotes = 0;    // PP: step starts where a→b spoke first minus where b→a did
    double forwardScore = 0; // PP: the same votes, weighted (positive: a→b is forward). The pair's own evidence:
                             // a pipeline (a path of PP pairs) is oriented as a whole by the sum along it,
                             // so ppChains may overrule the sign of one pair
    std::uint32_t distinctSizes = 0;
    // DP: a collective inside one pipeline (its ends are joined by PP pairs), e.g. the tied-embedding
    // all-reduce between the first and the last stage. A gradient sync, but of no DP group.
    bool pipelineCollective = false;
};

struct ParallelismResult {
    int gpus = 0; // GPUs of the job (topology; an unknown endpoint counts as one)
    int tp = 0, pp = 0, dp = 0;
    std::vector<std::vector<EndpointId>> dpGroups; // each in job NIC order
    // Per DP group (same size as dpGroups), members whose NIC carries no RoCE record (RecognizedJob::idleNics): a
    // ring passes their GPUs over NVLink between where it enters and leaves a host, and without a pipeline they
    // send nothing on the RoCE network. Counted in dp and gpus.
    std::vector<std::vector<IpAddr>> quietMembers;
    std::vector<std::vector<EndpointId>> ppChains; // stage 0 first
    std::vector<PairInfo> pairs;
    std::vector<std::string> notes; // inconsistencies and conventions, for the report
};

ParallelismResult inferParallelism(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                                   const ParallelismParams& params = {});

} // namespace prism
