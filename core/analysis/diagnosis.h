#pragma once
// Stage 5: diagnosis. Robust statistics (median and MAD, a k-sigma rule with k exposed) over the
// reconstructed steps and timeline, plus the BOCD rhythm regimes of the step division:
//   slow_rank   — a TP group whose compute per step (busy time before its PP sends, waiting excluded) is
//                 longer than its stage peers' in other pipelines (or, alone in its stage, than its own usual),
//                 or whose DP sync starts last, or whose expert all-to-all sends start last in its EP group at
//                 every exchange: the others wait for it. One finding per TP group and episode.
//   slow_link   — a NIC whose transfers (records of one channel merged back across the exporter's active
//                 timeout) move the same sizes at lower throughput than the job's other transfers of that kind
//                 and size class in the step (minLinkSlowdown times slower and k sigma below their median).
//                 Blamed on the NIC when (nearly) all its transfers are slow, including with a peer that is
//                 healthy otherwise; a pair that only talks to itself is reported as a pair; a slow member of a
//                 synchronous ring, which slows every member alike, is found by its late-ending hops.
//   slow_switch — at least two slow NICs behind the same leaf switch in overlapping steps.
//   slow_stage  — a PP stage slower by construction in every pipeline, all through the job (the last stage with
//                 the loss and the vocabulary): its time per micro-batch, and what it costs each step.
//   dp_imbalance — the DP groups wait at their sync for a different replica each step (uneven work: sequence
//                 lengths, data), a share of the job's time; no one rank is slow.
//   slow_step   — steps much slower than the job's rhythm (k-sigma on durations, or a BOCD regime whose
//                 median is slow) that no slow rank or link explains, or whose extra time is job-wide silence
//                 (a pause). Consecutive ones form an episode; episodes at a constant spacing are reported
//                 once, as a pattern (checkpoints every N steps).
// Step 0 is left out of the step statistics: it starts at the job's first record, so it is partial.
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "analysis/steps.h"
#include "analysis/timeline.h"
#include "model/report.h"

#include <string>
#include <vector>

namespace prism {

struct DiagnosisParams {
    double kSigma = 4.0;           // robust z-score (median/MAD) a value must exceed to be an outlier
    double minStepExcess = 0.10;   // a slow step lasts at least this much longer than the median step
    double minRankExcess = 0.08;   // a slow rank computes at least this much longer than its peers
    double minStageExcess = 0.15;  // a slow stage takes at least this much longer a micro-batch than the others
    double minLagShare = 0.03;     // ...or starts its DP sync this share of the median step after its group
    double minLateShare = 0.10;    // ...or its expert all-to-all sends this share of the exchange interval late
    std::int64_t exchangeWindowNs = 20'000; // a rank's sends of one all-to-all exchange start this close
    double minLinkSlowdown = 1.2;  // a slow record moves its bytes at least this many times slower
    double slowNicShare = 0.8;     // share of a NIC's records in a step that must be slow to blame the NIC
    std::size_t minNicRecords = 4; // records a NIC needs in a step to be judged
    int maxEpisodeGap = 1;         // flagged steps at most this many steps apart join one episode
    int minPatternRepeats = 3;     // periodic slow steps: at least this many episodes at a constant spacing
    double pauseShare = 0.5;       // a slow step whose extra time is at least this share silence is a pause
    double minSigmaShare = 0.01;   // sigma floor as a share of the median (a perfectly steady job has MAD 0)
    double minImbalanceShare = 0.05; // uneven work across DP replicas: their waits at the sync, of the job's time
    double maxImbalanceLastShare = 0.8; // ...unless one host is the last ready in this share of the steps
    double minSavedShare = 0.01;   // a slow rank whose fix would save less of a step is none
    // Slow links: a step's transfers are judged, and dropped, once the records have moved past it; false holds
    // them all until the end (the same findings, more memory: tests compare the two).
    bool judgeStepByStep = true;
};

struct Diagnosis {
    std::vector<Finding> findings;  // ordered by first step, then kind
    std::vector<std::uint8_t> slow; // per step: slower than the job's rhythm (explained or not)
    std::vector<std::string> notes;
};

// `slowLinks`: the job's slow-link findings from findSlowLinks with the same arguments, found beforehand (the
// pipeline finds them while the timeline is built: they need the steps only); null: found here.
Diagnosis diagnose(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                   const ParallelismResult& parallelism, const StepDivision& steps, const JobTimeline& timeline,
                   const DiagnosisParams& params = {}, const JobIndex* index = nullptr,
                   const std::vector<Finding>* slowLinks = nullptr);

// The slow links (and NICs) of a job, as diagnose finds them: from its records and steps, not its timeline.
std::vector<Finding> findSlowLinks(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                                   const ParallelismResult& parallelism, const StepDivision& steps,
                                   const DiagnosisParams& params = {}, const JobIndex* index = nullptr);

} // namespace prism
