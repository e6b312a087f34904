#pragma once
// Inside diagnose() (internal to the diagnosis*.cpp files): each kind of finding has its finder, in the file
// of its kind, and they share the helpers below (diagnosis.cpp). diagnosis_ranks.cpp: slow ranks (compute,
// sync lag, expert lateness); diagnosis_links.cpp: slow links and slow switches; diagnosis.cpp: slow stages and
// slow steps, and diagnose(), which runs them all.
#include "analysis/diagnosis.h"
#include "analysis/job_index.h"
#include "analysis/stats.h"

#include <string>
#include <vector>

namespace prism::diag {

struct Episode {
    int first, last;
};

// Runs of flagged steps (ascending, unique), joining runs at most maxGap steps apart.
std::vector<Episode> episodesOf(const std::vector<int>& steps, int maxGap);
std::string num(double v, int decimals);
std::string ms(double ns);
std::string stepRange(int a, int b);
// Periodic episodes (checkpoints, evaluation every N steps) are one pattern: the longest chain of episode
// starts (ascending step indices) each one period (+-1 step) after the previous, over the periods the
// starts' spacings offer; empty when shorter than `minRepeats`. `period`: the chain's median spacing.
std::vector<std::size_t> periodicChain(const std::vector<int>& starts, int minRepeats, int& period);
// Makes `f` (a slow_step finding spanning the chain: its score and evidence) the periodic_stall finding.
void makePeriodicStall(Finding& f, int period, std::vector<int> occurrences, double extraEachNs, bool usual,
                       double baseNs);
std::string periodicStallNote(int period);
// The usual step duration among `d` (steps 1..): the median, or the fastest cluster when most steps are slowed.
RobustStats usualStep(const std::vector<double>& d, const DiagnosisParams& p);
// Finding::savesMsPerStep and savesShare of every finding, and the costliest first.
void assignCosts(std::vector<Finding>& findings, const StepDivision& sd, const DiagnosisParams& p);
// Robust z with a sigma floor (a perfectly steady series has MAD 0: everything would be an outlier).
double zOf(const RobustStats& st, double v, double floorShare);

// Per rank and step, how late its expert all-to-all sends start in its EP group (expertLateness): the median
// exchange's lateness as a share of the usual interval and in ns, and the sum over the step's exchanges (what
// the group waited for it at them).
struct Lateness {
    // Per rank x step: its lateness as a share of the exchange interval where it stands out in its group (else
    // 0), the same whether or not it stands out (raw), in ns, and summed over the step's exchanges.
    std::vector<double> share, raw, ns, sumNs;
};
Lateness expertLateness(const FlowTable& flows, const JobIndex& ix, const RecognizedJob& job, const StepDivision& sd,
                        const JobTimeline& tl, const DiagnosisParams& p);
std::vector<Finding> slowRanks(const JobTimeline& tl, const StepDivision& sd, const Lateness& late,
                               const DiagnosisParams& p);
std::vector<Finding> slowLinks(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                               const JobIndex& ix, const StepDivision& sd, const DiagnosisParams& p);
// Uneven work across DP replicas: the sync waits for a different replica each step (diagnosis_imbalance.cpp).
std::vector<Finding> dpImbalance(const JobTimeline& tl, const StepDivision& sd, const std::vector<Finding>& others,
                                 const DiagnosisParams& p);
// At least two slow NICs (of `links`) behind one leaf switch in overlapping steps.
std::vector<Finding> slowSwitches(const std::vector<Finding>& links);

} // namespace prism::diag
