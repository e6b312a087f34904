#pragma once
// Comparing two runs (issue 17): what changed between run A (yesterday's) and run B (today's). Jobs are
// matched (same GPUs, else same shape), their ranks matched by role (PP stage, DP group and position in it,
// as the network sees them), and for each quantity of the per-rank breakdown (compute, PP send/receive, DP
// sync, waiting) and for each link (NIC, or NIC pair) the per-step values of A and B are compared. A change
// counts only when it stands out of the step-to-step spread of both runs (robust sigma, median/MAD) and out
// of an absolute floor, so two clean runs of the same job give no difference. docs/FORMATS.md "The
// comparison (llmprism-compare)" defines the JSON.
#include "analysis/pipeline.h"
#include "model/capture.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace prism {

struct CompareParams {
    double kSigma = 4.0;         // a difference exceeds k x the robust spread of the per-step values (either run)
    double minShare = 0.01;      // ... and this share of A's median step
    double minDeltaMs = 0.05;    // ... and this many ms per step
    double minLinkSlowdown = 1.25; // a link's time per byte changes at least this many times
    double nicShare = 0.75;      // share of a NIC's peers whose transfers changed, to blame the NIC's link
    double uniformShare = 0.9;   // share of a stage's (the job's) ranks changed alike to report it once for all
    double minJaccard = 0.5;     // NIC-set overlap for "the same GPUs"
    double minSigmaShare = 0.01; // spread floor as a share of the quantity's median (a steady value has MAD 0)
};

// One side of the comparison: the capture (flows and topology; the links need the flows) and its analysis with
// the per-rank timelines (runAnalysis, or a session opened with its timelines).
struct RunData {
    std::string source; // as the user named it
    const Capture* capture = nullptr;
    const Analysis* analysis = nullptr;
};

// Where a difference is. Empty fields do not apply: a job-wide change has none, a stage-wide one a stage.
struct DiffPlace {
    std::string ip, host;            // a rank (the first NIC of a TP group) or a NIC link, in run B
    std::string ipA;                 // run A's rank matched to it by role, when it is another NIC
    std::string switchName;          // the leaf of a NIC link
    std::string srcIp, dstIp;        // a NIC pair (link between two NICs)
    std::string srcHost, dstHost;
    int stage = -1, dpGroup = -1;    // PP stage; DP group (index into run B's dp_groups)
    std::vector<std::string> ips;    // every NIC of the place (a TP group: its GPUs change together)
    int ranks = 0;                   // ranks the place covers
};

struct Difference {
    std::string what; // compute | pp | dp_sync | waiting | link | shape
    DiffPlace where;
    double deltaMsPerStep = 0; // B minus A, per step (mean over the steps), per rank of the place
    double aMs = 0, bMs = 0;   // the quantity per step in A and in B (link: transfer time per step)
    double noiseMs = 0;        // the step-to-step spread it had to stand out of (k x sigma)
    double slowdown = 0;       // link: B's time per byte over A's (> 1: slower in B)
    double aGbps = 0, bGbps = 0; // link: throughput of its transfers
    int effectOf = -1;         // waiting explained by another difference: its index (it comes later in the list)
    // The steps of B (report indices) the change is in, when it is in a few consecutive steps rather than all
    // through the run (-1: all through): a pause, an episode of a slow rank or link. deltaMsPerStep stays the mean
    // over all steps; rangeDeltaMs is the change per step of the range.
    int firstStep = -1, lastStep = -1;
    double rangeDeltaMs = 0;
    std::string message;
};

struct Breakdown {
    double compute = 0, pp = 0, dpSync = 0, waiting = 0; // ms per step, mean over ranks and steps
};

// Per rank of B: the rank of A matched to it and the change of each quantity (ms per step), for views.
struct RankDelta {
    int rankB = -1, rankA = -1;
    double compute = 0, pp = 0, dpSync = 0, waiting = 0;
};

struct JobComparison {
    int jobA = -1, jobB = -1;  // indices into the reports' jobs
    std::string a, b;          // job ids
    std::string matchedBy;     // "gpus" (NIC sets overlap), "shape", "only" (the one job left), "chosen"
    double gpuJaccard = 0;     // overlap of the NIC sets
    bool sameShape = true;
    std::string shapeA, shapeB; // "TP 8 × PP 2 × DP 2 (32 GPUs)"
    double medianStepMsA = 0, medianStepMsB = 0, meanStepMsA = 0, meanStepMsB = 0;
    int stepsA = 0, stepsB = 0; // steps of each job; step 0 (partial) is left out of the statistics
    Breakdown breakdownA, breakdownB;
    // By |delta per step|, largest first; waiting explained by a cause follows the causes: the first is the main
    // reason.
    std::vector<Difference> differences;
    std::vector<RankDelta> ranks;        // matched ranks (same shape only)
    // How near the changes left out came to counting: the largest |delta| over its threshold among the per-rank
    // quantities (< 1), and the largest change of a NIC's time per byte (as a factor >= 1) among NICs not reported.
    double residual = 0, linkResidual = 1;
    std::vector<std::string> notes;
};

struct Comparison {
    std::string sourceA, sourceB;
    std::vector<JobComparison> jobs;
    std::vector<std::string> unmatchedA, unmatchedB; // job ids left without a partner
};

// Matches the jobs of A and B and compares each pair.
Comparison compareRuns(const RunData& a, const RunData& b, const CompareParams& params = {});
// Compares job `jobA` of A with job `jobB` of B (indices into the reports' jobs), whatever their GPUs.
JobComparison compareJobs(const RunData& a, int jobA, const RunData& b, int jobB, const CompareParams& params = {});
// The index of the job named `id` in a report, -1 when none.
int jobIndexById(const Report& report, const std::string& id);

// The llmprism-compare JSON (version 1) and a plain summary for a terminal.
nlohmann::json comparisonToJson(const Comparison& comparison);
std::string comparisonToText(const Comparison& comparison);

} // namespace prism
