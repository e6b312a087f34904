#pragma once
// Stage 3's rhythm choosers: where a series of activity pieces (a group's records as the union of their
// intervals, ascending) is cut into bursts, one per step, and StepParams, the parameters of step division they
// share with divideSteps (steps.h) and the pipeline drain test (drains.h). Parallelism inference uses them too.
#include "analysis/bocd.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace prism {

// The parameters of step division (AnalysisOptions::steps).
struct StepParams {
    BocdParams bocd;                        // on the interval series; cpThreshold 0.95 (the paper's)
    bool alignClocks = true;                // estimate per-leaf exporter clock offsets from sync starts
    std::int64_t maxClockOffsetNs = 500'000; // a larger estimated offset is not skew: ignored
    std::int64_t minBoundaryGapNs = 50'000; // a step boundary is a quiet gap at least this long
    double regularBand = 1.35;              // an interval within [P / band, P * band] of the median P is regular
    std::size_t maxCandidates = 64;         // cut counts tried per series (the sharpest drops in gap size)
    double drainedShare = 0.5;              // no DP: share of PP links (and head links) at rest in a drain
    // No DP, pp >= 3: a link one transfer deeper than its level, between a gradient and an activation, rests
    // (a gradient of the step was lost) on every link, or on the head links only (the orientation's test).
    bool anyLinkLosesGradients = true;
    // No DP, pp = 2: a turn (two gradients behind, two activations ahead) rests at gaps shorter than a drain's.
    // Not to orient the pipeline: taken the wrong way round, turns come as often inside steps.
    bool twoStageTurns = true;
    std::int64_t exchangeWindowNs = 20'000; // a member's sends of one expert all-to-all start this close
    std::size_t splitUnionRecords = 1 << 16; // a job's activity (records by start) united in two halves side by side
    unsigned threads = 0; // for the passes over a job's records and its groups' series (0: one per core): the
                          // division is the same on any number
};

// Unites [x.first, x.second] with `pieces` (ascending, apart: each ends before the next starts), keeping them so:
// the pieces it overlaps or touches become one with it, else it goes in its place. Cheap when x starts near
// the end (records by start, stirred a little by clock offsets): the scan goes back from the last piece.
// (Inline: a call a record took 2% of `analyze large`.)
inline void unitePiece(std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                       std::pair<std::int64_t, std::int64_t> x) {
    std::size_t hi = pieces.size(); // pieces [hi, end) lie wholly after x
    while (hi > 0 && pieces[hi - 1].first > x.second) --hi;
    std::size_t lo = hi; // pieces [lo, hi) overlap or touch x
    while (lo > 0 && pieces[lo - 1].second >= x.first) --lo;
    if (lo == hi) {
        pieces.insert(pieces.begin() + std::ptrdiff_t(hi), x);
        return;
    }
    pieces[lo] = {std::min(pieces[lo].first, x.first), std::max(pieces[hi - 1].second, x.second)};
    pieces.erase(pieces.begin() + std::ptrdiff_t(lo) + 1, pieces.begin() + std::ptrdiff_t(hi));
}

// The union of two such unions (`a` and `b` each ascending, apart), joined as unitePiece joins: the pieces united
// in two parts give the pieces united whole.
std::vector<std::pair<std::int64_t, std::int64_t>>
joinUnions(const std::vector<std::pair<std::int64_t, std::int64_t>>& a,
           const std::vector<std::pair<std::int64_t, std::int64_t>>& b);

// Chooses where to cut a sorted sequence of activity pieces [start, end] (non-overlapping, ascending) into
// bursts: among the cut sets made of the c largest quiet gaps (c where the gap size drops), the one whose burst
// ends are most regular: score (regular intervals - 1) x median interval^lengthExponent, regular meaning within
// params.regularBand of the median. 1 (time covered) suits series with an inner rhythm (PP traffic), 0.5
// (count first) suits sync bursts and keeps every step between periodic pauses. With activeSpans an interval
// runs from the first activity after a cut to the next cut (the quiet gap left out), so a pause, which
// stretches one gap, leaves its step regular. With clearGapWins (sync bursts, which have no inner rhythm), a
// weak separation (< 2x between the last gap cut and the next) gives way to a far sharper one at a larger
// count (>= 100x: the gaps between bursts against those inside them), so that steps of three different
// lengths, none of them a majority, are still all cut. Returns the indices i of pieces after which a cut
// falls, ascending. Exposed for tests.
std::vector<std::size_t> chooseCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                    const StepParams& params = {}, double lengthExponent = 1.0,
                                    bool activeSpans = false, bool clearGapWins = false);

// The coarser rhythm over sync bursts when DP traffic runs all through the step (ZeRO-3 parameter gathers per
// layer group; expert all-to-all where it cannot be told from the ring): pieces are bursts, each from the first
// activity after the previous burst to its end. Candidates are the c longest quiet gaps (where the gap size
// drops); the coarsest whose steps hold 3 or more pieces (median) and where steps of about that count hold
// three quarters of all pieces is the step rhythm (a step repeats its passes: anomalies change its times, not
// its count). It is returned when the intervals between piece ends inside its steps spread (mean absolute
// deviation >= 15% of the median: the passes' paces differ), or when the burst opening each step holds more
// than twice the usual interval of activity (a pause adds quiet, not activity); else nothing: the pieces are
// the steps (a pure-DP job with periodic pauses has even counts, alike intervals and ordinary bursts after
// its pauses). Steps cut apart by quiet inside them (a slow GPU among expert-parallel peers) are put back
// together first (mergeFragments). No division holds the pieces evenly: nothing. Exposed for parallelism
// inference and tests.
std::vector<std::size_t> chooseCoarseCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                          const StepParams& params = {});

// Where no coarser rhythm stands out by its quiet (ZeRO-3 whose optimizer quiet is shorter than a layer group's
// compute: the longest gaps are the passes', and the optimizer's may merge a step's last reduce-scatter with the
// next step's first gathers into one piece), the step is the period of the gap sequence. A step's gaps are its
// forward compute per layer group, then its backward compute per layer group, which is longer (a backward
// computes two gradients): a run of short gaps, then a run of long ones. The step ends with the reduce-scatter
// after the last backward: the first thing in the piece that follows the long run. The period P is the
// smallest (4..64, six or more periods) whose phases explain the log gaps and the log piece lengths (each taken
// less the mean of the P around it, so that a slowed stretch of steps keeps its phases) to half their spread
// together, with one run of two or more long phases and one of two or more short ones (a pure-DP job's periodic
// pauses are one long phase: no period; an optimizer quiet far shorter than the forward's gaps is a third
// length, and the runs split between forward and backward). Where a record spans some steps' optimizer quiet
// (one piece fewer: every later gap a phase off), each gap's phase is found as a path that may slip a phase,
// and the steps end at the boundary phase's pieces. The piece at the phase after the long run ends a step (`atStart`
// false: its first activity burst ends it), or, where the long gap before it stands twice above the long phases
// (a pause before the step), the step ends where the piece starts (`atStart` true). Steps are walked P pieces at
// a time, each boundary moved up to P/4 pieces where the next P gaps and pieces match the phases better (a lost
// or split round shifts no later step); at least five, half of them at a gap that turns from long to short.
struct PeriodicCut {
    std::size_t piece; // the piece the step boundary lies in or before
    bool atStart;      // the boundary is the quiet before the piece (a pause), not inside or after it
};
std::vector<PeriodicCut> choosePeriodicCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                            const StepParams& params = {});

// A distributed optimizer (ZeRO-1/2, Megatron's) syncs twice per step: the gradient reduce-scatter ends the
// step, the optimizer runs on the shard with the network quiet, then the parameter all-gather opens the next
// step. So a ring's collectives alternate: closer (reduce-scatter), opener (all-gather), closer, ... An
// all-gather lies nearer to the reduce-scatter before it (the optimizer's quiet) than to the one after it
// (the forward and backward passes), a reduce-scatter nearer to the all-gather after it.
//  1. Cut at the step rhythm, a burst is often reduce-scatter, quiet, all-gather: one quiet gap inside it
//     dominates (>= 4x its other inner gaps, >= minBoundaryGapNs). When at least three bursts and half of
//     those with inner gaps have one, each is cut there (a pause cuts its step's pair apart: fewer have one).
//  2. The parts then alternate. Each inner part whose quiet before and after differ by 1.5x or more votes for
//     the parity of the openers (the nearer neighbour is its partner); when two thirds of the inner parts
//     vote and three quarters of the votes agree, the parts at that parity are openers (one burst per step
//     with a few uneven steps, as anomalies make them, casts a few votes of chance: half of a 10-step job's
//     did; pauses between the two turn a few votes: 8 of 48 with four 400 ms pauses). Failing that, parts whose
//     quiets differ by 1.15x vote, and 16 voters with nine in ten agreeing decide (an optimizer half as long
//     as the jittered compute). Parity, not each
//     part's own gaps, decides: a checkpoint between a reduce-scatter and its all-gather (a pause of any
//     length) turns the gaps around those two parts, not the alternation.
// Plain all-reduce syncs (one burst per step, evenly spaced) cast no votes and are left as they are.
// On success `cuts` become the parts' and `opener` tells, per part, whether it opens a step; else `opener` is
// empty. Exposed for divideSteps.
// Where a ring's reduce-scatter and all-gather did not part (an overlapped reduce-scatter comes in buckets
// with the backward's compute between them, as long as the optimizer's quiet), the other rings tell: after
// the optimizer every ring's all-gather starts at once (Megatron's optimizer ends with a job-wide grad-norm
// all-reduce). `openerStarts` (sorted) are where other rings' all-gathers began; a piece of this ring that
// starts within `windowNs` of one, after a quiet gap of at least params.minBoundaryGapNs, opens an all-gather:
// its burst is split there (or is one, when it starts the burst). Applies only where `opener` is empty
// (splitDistributedOptimizer found nothing) and two or more such pieces are found; `cuts` and `opener` as there.
void splitAtOtherOpeners(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                         std::vector<std::size_t>& cuts, std::vector<char>& opener,
                         const std::vector<std::int64_t>& openerStarts, std::int64_t windowNs,
                         const StepParams& params);

// Joins pieces apart by less than kLullShare (2%) of the shorter of the two and less than kLullNs: a lull between
// two buckets of one collective (its members' hops end up to a percent of a chunk apart, 0.5 ms between 478 ms
// buckets) is no quiet a step could end in (a series of long buckets was cut at every bucket: 114 steps for 13).
// An optimizer's quiet between a reduce-scatter and an all-gather is longer (tens of ms, compute) even where
// the collectives are seconds long, and must stay (else each step ended at its all-gather).
inline constexpr double kLullShare = 0.02;
inline constexpr std::int64_t kLullNs = 2'000'000;
void joinLulls(std::vector<std::pair<std::int64_t, std::int64_t>>& pieces);

void splitDistributedOptimizer(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                               std::vector<std::size_t>& cuts, std::vector<char>& opener, const StepParams& params);

} // namespace prism
