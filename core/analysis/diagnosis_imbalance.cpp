// Uneven work across DP replicas (dp_imbalance): sequence lengths or data that differ between DP ranks make each
// step wait at its gradient sync for its heaviest replica, a different one from step to step. No one rank is slow
// (slow_rank finds the one that always is); the cost is the time the others wait. Phases: each step's wait and
// last-ready host, the steps other findings do not explain, then the verdict.
#include "analysis/diagnosis_internal.h"

#include <algorithm>
#include <map>

namespace prism::diag {

namespace {

struct StepWait {
    double waitNs = 0;  // the median over DP groups of their members' mean wait before the sync
    int lastReady = -1; // the host most of the groups waited for, -1 when none
};

// Per step, what the DP groups waited for their last member: each group's members' mean wait (what balancing its
// work to the mean would save), the median over groups; and the host whose members were last ready in most groups.
std::vector<StepWait> stepWaits(const JobTimeline& tl) {
    const std::size_t K = tl.steps.size();
    std::map<int, std::vector<std::size_t>> groups;
    for (std::size_t r = 0; r < tl.ranks.size(); ++r) groups[tl.ranks[r].dpGroup].push_back(r);
    std::vector<StepWait> out(K);
    for (std::size_t k = 1; k < K; ++k) {
        std::vector<double> means;
        std::map<int, int> last;
        for (const auto& [g, members] : groups) {
            double sum = 0, least = -1;
            int host = -1, n = 0;
            for (std::size_t r : members) {
                const RankStepStats& s = tl.ranks[r].stepStats[k];
                if (s.dpStartNs == RankStepStats::kNoTime) continue;
                sum += double(s.dpWaitNs);
                ++n;
                if (least < 0 || double(s.dpWaitNs) < least) least = double(s.dpWaitNs), host = tl.ranks[r].host;
            }
            if (n < 2) continue;
            means.push_back(sum / n);
            ++last[host];
        }
        if (means.empty()) continue;
        out[k].waitNs = medianOf(means);
        int most = 0;
        for (const auto& [host, count] : last)
            if (count > most) most = count, out[k].lastReady = host;
    }
    return out;
}

} // namespace

// dp_imbalance: over the steps no other finding explains, the DP groups wait for their last member a median
// share of the step of at least minImbalanceShare, and no host is the last ready in maxImbalanceLastShare of them.
std::vector<Finding> dpImbalance(const JobTimeline& tl, const StepDivision& sd, const std::vector<Finding>& others,
                                 const DiagnosisParams& p) {
    const std::size_t K = tl.steps.size();
    if (K < 6 || sd.steps.size() != K) return {};
    const std::vector<StepWait> waits = stepWaits(tl);
    double waited = 0, total = 0;
    std::vector<double> perStep, shares;
    std::map<int, int> lastReady;
    int judged = 0;
    for (std::size_t k = 1; k < K; ++k) {
        const int index = tl.steps[k].index;
        const bool explained = std::any_of(others.begin(), others.end(), [&](const Finding& f) {
            return f.kind != "slow_stage" && f.firstStep <= index && index <= f.lastStep;
        });
        if (explained || waits[k].lastReady < 0) continue;
        ++judged;
        waited += waits[k].waitNs;
        total += double(tl.steps[k].durationNs());
        perStep.push_back(waits[k].waitNs);
        shares.push_back(waits[k].waitNs / std::max(1.0, double(tl.steps[k].durationNs())));
        ++lastReady[waits[k].lastReady];
    }
    // The typical step waits (a few steps of long waits are another story: a stall, a straggler's episode).
    if (judged < 5 || total <= 0 || medianOf(shares) < p.minImbalanceShare) return {};
    int most = 0;
    for (const auto& [host, count] : lastReady) most = std::max(most, count);
    // One host last nearly every time is a slow rank's, not uneven work (by chance, with two replicas, each is
    // last in half the steps).
    if (most >= p.maxImbalanceLastShare * judged) return {};
    Finding f;
    f.kind = "dp_imbalance";
    f.firstStep = tl.steps[1].index;
    f.lastStep = tl.steps.back().index;
    f.score = 1.0 + waited / total;
    f.savesMsPerStep = waited / judged / 1e6;
    const double slowestShare = double(most) / judged;
    f.evidence = {{"wait_ms", medianOf(perStep) / 1e6},
                  {"wait_share", waited / total},
                  {"replicas_last", double(lastReady.size())},
                  {"slowest_replica_share", slowestShare},
                  {"steps", double(judged)}};
    f.message = "uneven work across DP replicas: in " + std::to_string(judged) +
                " steps the gradient sync waited a median " + ms(medianOf(perStep)) + " (" +
                num(100.0 * waited / total, 0) + "% of the time) for the slowest replica, a different one from step to "
                "step (" + std::to_string(lastReady.size()) + " hosts took turns, none in more than " +
                num(100.0 * slowestShare, 0) + "% of the steps) — uneven sequence lengths or data across DP ranks: "
                "balance them (sequence packing, length-aware batching)";
    return {f};
}

} // namespace prism::diag
