#pragma once
// Bayesian Online Change-point Detection (Adams & MacKay 2007) with a conjugate Normal-Gamma model
// (Student-t predictive) and a constant hazard 1/lambda, computed in log space. Linear time on piecewise data
// through run-length pruning: before each point the longest run lengths whose total posterior mass is below
// pruneThreshold are dropped (the rule of the R package ocp, truncRlim), and at most maxRunLength run
// lengths are kept.
//
// Run-length convention (Adams & MacKay, and ocp): after point t, run length r means the current segment
// holds the r points x[t-r+1..t]; r = 0 means a segment starts right after t. With a constant hazard
// P(r_t = 0) is always 1/lambda, so it says nothing: the change-point probability is instead read from the
// run lengths whose segment starts near point i, `lag` points after that neighbourhood (fixed-lag smoothing).
//
// Two outputs: the online threshold rule (what the engine uses) and the "most probable segmentation" of
// ocp's maxCPs recursion, which reproduces the R package as run by TCPDBench (see docs/BOCD.md).
// The functions are pure and thread-safe.
#include <cstddef>
#include <span>
#include <vector>

namespace prism {

struct BocdParams {
    double lambda = 100;             // expected segment length: hazard H = 1/lambda (must be > 1)
    double mu0 = 0;                  // Normal-Gamma prior: mean,
    double kappa0 = 1;               //   pseudo-count of the mean,
    double alpha0 = 1;               //   shape and
    double beta0 = 1;                //   rate of the precision
    double pruneThreshold = 1e-4;    // drop the longest run lengths while their summed mass is below this (0: never)
    std::size_t maxRunLength = 0;    // carry at most this many run lengths to the next point (0 = no cap)
    double cpThreshold = 0.95;       // a change point is flagged where cpProbability exceeds this
    std::size_t lag = 5;             // points seen after a candidate change before its probability is read
    std::size_t window = 2;          // a segment starting within ±window points of i counts as a change at i
    bool standardize = true;         // z-score the input first (sample sd, as R's scale()); see zscore()
    bool segmentation = true;        // also compute the most probable segmentation (one more pass per point)
};

struct BocdResult {
    // Per point i: P(a segment starts in [i-window, i+window] | x[0..min(i+window+lag, n-1)]), read at that
    // time; the series start (index 0) never counts. The threshold rule uses this.
    std::vector<double> cpProbability;
    // Per point i: P(a segment starts exactly at i), read at the same time; locates a change inside a window.
    std::vector<double> startProbability;
    // Per point t: the most probable run length after x[t] (ties: the shorter run).
    std::vector<std::size_t> mapRunLength;
    // Threshold rule: each maximal run of points with cpProbability > cpThreshold gives one change point,
    // the point of the run with the highest startProbability (ties: the earliest). Ascending.
    std::vector<std::size_t> changePoints;
    // Most probable segmentation, ocp's maxCPs: 0-based indices where a segment starts, always beginning
    // with 0 — the list TCPDBench reports. Empty when params.segmentation is false.
    std::vector<std::size_t> segmentation;
    std::size_t maxRunLengthsKept = 0; // largest run-length vector seen (shows what pruning achieved)
    double meanRunLengthsKept = 0;     // its mean over the points: the cost per point is proportional to it
};

// Univariate BOCD with pruning; pruneThreshold = 0 and maxRunLength = 0 give the exact O(n²) recursion.
// Throws std::invalid_argument on a non-finite value (as ocp does without a missing-point rule), on
// |x - mu0| > 1e150 without standardize (its square would overflow) or on invalid parameters.
BocdResult runBocd(std::span<const double> x, const BocdParams& p = {});

// (x - mean) / sd with the sample sd, computed like R's scale() (long double sums) to follow the
// reference's numerics. A constant series is only centred (R would divide by 0).
std::vector<double> zscore(std::span<const double> x);

} // namespace prism
