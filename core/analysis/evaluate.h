#pragma once
// Scoring a report against ground truth (truth.json): the figures `llmprism-cli evaluate` prints.
// docs/EVALUATION.md defines every figure, its matching rules and its empty cases.
#include "model/report.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace prism {

struct EvaluationOptions {
    double minJaccard = 0.5;     // a report job matches a truth job only at this GPU-set Jaccard or above
    double stepTolerance = 0.10; // step ends match within this fraction of the truth job's median step duration
};

// The counts behind a precision/recall pair. Right report items and found truth items are counted apart
// because they differ for findings (two findings may find the same anomaly).
struct PrecisionRecall {
    std::size_t reportItems = 0;
    std::size_t truthItems = 0;
    std::size_t reportMatched = 0; // report items that are right
    std::size_t truthMatched = 0;  // truth items that were found

    // reportMatched / reportItems and truthMatched / truthItems. An empty side scores 1.0 only when the
    // other side is empty too, else 0.0: a wrong answer never scores 1.
    double precision() const;
    double recall() const;
    bool exact() const { return reportMatched == reportItems && truthMatched == truthItems; }
    PrecisionRecall& operator+=(const PrecisionRecall& other);
};

// One of TP, PP, DP. `exact` is false for a job without a match.
struct DimensionScore {
    int truth = 0;
    int report = 0;
    bool exact = false;
};

struct StepScore {
    std::size_t truthSteps = 0;
    std::size_t reportSteps = 0;
    std::size_t matched = 0;              // one-to-one pairs of step ends within the tolerance
    std::int64_t toleranceNs = 0;         // per job; 0 in totals
    std::size_t durationSamples = 0;      // matched steps whose both boundaries matched
    double sumDurationError = 0.0;        // sum of |d_report - d_truth| / d_truth over the samples
    double maxDurationError = 0.0;
    std::int64_t maxBoundaryOffsetNs = 0; // largest |end_report - end_truth| over matched steps

    std::size_t missed() const { return truthSteps - matched; }
    std::size_t spurious() const { return reportSteps - matched; }
    double found() const;     // matched / truthSteps (empty rule of PrecisionRecall)
    double precision() const; // matched / reportSteps (empty rule of PrecisionRecall)
    double meanDurationError() const { return durationSamples ? sumDurationError / double(durationSamples) : 0.0; }
    bool exact() const { return matched == truthSteps && matched == reportSteps; }
    StepScore& operator+=(const StepScore& other);
};

// One truth job with the report job matched to it, or one side alone when nothing matched.
struct JobScore {
    int truthIndex = -1;  // position in truth.jobs; -1 for a report job that matched no truth job
    int reportIndex = -1; // position in report.jobs; -1 for a truth job that no report job matched
    std::string truthId;
    std::string reportId;

    double jaccard = 0.0; // of the GPU (NIC address) sets; 0 without a match
    std::size_t truthGpus = 0;
    std::size_t reportGpus = 0;
    std::size_t sharedGpus = 0;
    std::size_t missingGpus = 0; // in truth, not in the report job
    std::size_t extraGpus = 0;   // in the report job, not in truth
    bool recognized = false;     // matched with exactly the same GPU set

    DimensionScore tp, pp, dp;
    PrecisionRecall dpPairs;  // unordered pairs of addresses that share a DP group
    PrecisionRecall ppPairs;  // directed (stage i, stage i+1) pairs from the chains
    PrecisionRecall ppChains; // whole chains (length >= 2) with the same order
    StepScore steps;
    PrecisionRecall findings;                              // report: findings; truth: anomalies
    std::map<std::string, PrecisionRecall> findingsByKind; // report side by finding kind, truth side by anomaly kind

    bool matched() const { return truthIndex >= 0 && reportIndex >= 0; }
    // Recognized, TP/PP/DP, DP pairs, PP pairs and chains exact, every step found and none spurious.
    bool perfect() const;
};

// Micro-averages: counts summed over every job, matched or not (a missed job's items all count as missed,
// an extra report job's items all count as wrong).
struct EvaluationTotals {
    PrecisionRecall jobs;        // recognition: exact GPU-set matches / report jobs, / truth jobs
    std::size_t matchedJobs = 0; // matched by overlap (Jaccard >= minJaccard), exact or not
    std::size_t tpExact = 0;     // truth jobs whose TP was found exactly, out of jobs.truthItems
    std::size_t ppExact = 0;
    std::size_t dpExact = 0;
    PrecisionRecall dpPairs;
    PrecisionRecall ppPairs;
    PrecisionRecall ppChains;
    StepScore steps;
    PrecisionRecall findings;
    std::map<std::string, PrecisionRecall> findingsByKind;
    // restart_of links: a report job's link is right when it names the job matched to the truth job's link.
    PrecisionRecall restarts;
};

struct EvaluationResult {
    EvaluationOptions options;
    std::vector<JobScore> jobs; // truth jobs in truth order, then unmatched report jobs in report order
    EvaluationTotals totals;

    nlohmann::json toJson() const; // every figure, stable keys (docs/EVALUATION.md)
    std::string toText() const;    // a table per job, then the totals
    // Every truth job recognized exactly, no extra report job, every job perfect() and every restart link
    // right (findings aside).
    bool perfect() const;
};

// Scores `report` (its jobs' findings) against `truth` (its jobs' anomalies). Pure; never throws on content.
EvaluationResult evaluate(const Report& report, const Report& truth, const EvaluationOptions& options = {});

} // namespace prism
