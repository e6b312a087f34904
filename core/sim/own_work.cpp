// Truth of a job's own work: what nothing injected still makes it wait for. Uneven work across DP replicas
// (dp_imbalance: the groups wait at the gradient sync for a different member each step) and, in a drawn job, a
// replica whose drawn compute in a step stands far above its peers' by chance (an optional slow_rank: a real
// straggler of that step, which the engine may name or not). Both come from one run of the job on its own
// (recordRun), before anything is injected.
#include "sim/placement.h"
#include "sim/simulator.h"

#include <algorithm>
#include <vector>

namespace prism::sim {

namespace {

// A drawn replica at least this many times its peers' compute in a step is a straggler of that step.
constexpr double kChanceStraggler = 1.3;

// A slow rank or link in step k (injected, or found in a recorded trace): what the job waits for there.
bool coveredByStraggler(const SimConfig& c, int k) {
    return std::any_of(c.anomalies.begin(), c.anomalies.end(), [&](const AnomalySpec& a) {
        return a.job == 0 && (a.kind == "slow_rank" || a.kind == "slow_link") && a.firstStep <= k && k <= a.lastStep;
    });
}

// dp_imbalance when the DP groups wait 3% or more of the steps no straggler or slow link covers;
// optional below 8% (near the engine's bar) or with one stage: the simulated ring starts all members together
// once the last is ready, so the capture holds no trace of who waited (a real NCCL ring's first hops would).
void labelImbalance(SimConfig& c, const RunRecord& run) {
    const JobSpec& j = c.jobs[0];
    if (j.dp < 2 || j.zero3) return;
    double waited = 0, total = 0;
    int judged = 0;
    for (std::size_t k = 1; k < run.stepNs.size() && k < run.syncWaitNs.size(); ++k) {
        if (coveredByStraggler(c, int(k))) continue;
        waited += double(run.syncWaitNs[k]);
        total += run.stepNs[k];
        ++judged;
    }
    // Where a straggler covers half the steps, it is what the job waits for, not uneven work.
    if (2 * judged < j.steps || total <= 0 || waited < 0.03 * total) return;
    AnomalySpec a;
    a.kind = "dp_imbalance";
    a.firstStep = 0;
    a.lastStep = j.steps - 1;
    a.factor = 1.0 + waited / total;
    a.recorded = true;
    a.optional = waited < 0.08 * total || j.pp == 1;
    a.savesShare = waited / total;
    a.savesMsPerStep = waited / judged / 1e6;
    c.anomalies.push_back(a);
}

// Chance stragglers of a drawn job: per (step, stage), a replica whose compute is kChanceStraggler times its
// peers' (the faster of two, else their median); consecutive steps of one replica make one label.
void labelChanceStragglers(SimConfig& c, const RunRecord& run) {
    const JobSpec& j = c.jobs[0];
    if (j.recorded || j.dp < 2 || j.zero3 || j.computeJitter <= 0) return;
    const std::size_t dp = std::size_t(j.dp), pp = std::size_t(j.pp);
    const int steps = int(run.computeNs.size() / (dp * pp));
    const int perHost = gpusUsedPerHost(j);
    for (std::size_t p = 0; p < pp; ++p)
        for (std::size_t d = 0; d < dp; ++d) {
            std::vector<int> slow;
            std::vector<double> ratios;
            for (int k = 0; k < steps; ++k) {
                std::vector<double> peers;
                for (std::size_t e = 0; e < dp; ++e)
                    if (e != d) peers.push_back(run.computeNs[(std::size_t(k) * dp + e) * pp + p]);
                std::nth_element(peers.begin(), peers.begin() + peers.size() / 2, peers.end());
                const double ref = peers[peers.size() / 2];
                const double own = run.computeNs[(std::size_t(k) * dp + d) * pp + p];
                if (ref > 0 && own >= kChanceStraggler * ref && !coveredByStraggler(c, k)) {
                    slow.push_back(k);
                    ratios.push_back(own / ref);
                }
            }
            const int rank = int(j.tp * (d + dp * p)); // TP rank 0 of the group: the truth names its TP group
            for (std::size_t i = 0; i < slow.size();) {
                std::size_t e = i;
                while (e + 1 < slow.size() && slow[e + 1] == slow[e] + 1) ++e;
                AnomalySpec a;
                a.kind = "slow_rank";
                a.host = j.hosts[std::size_t(rank / perHost)];
                a.gpu = j.firstGpu + rank % perHost;
                a.firstStep = slow[i];
                a.lastStep = slow[e];
                a.factor = *std::max_element(ratios.begin() + std::ptrdiff_t(i), ratios.begin() + std::ptrdiff_t(e) + 1);
                a.recorded = true;
                a.optional = true;
                c.anomalies.push_back(a);
                i = e + 1;
            }
        }
}

} // namespace

void labelOwnWork(SimConfig& c) {
    if (c.jobs.empty()) return;
    const JobSpec& j = c.jobs[0];
    // A recorded job's slow ranks are the trace import's (sim/trace_import.cpp), optional ones among them.
    std::erase_if(c.anomalies, [&](const AnomalySpec& a) {
        return a.job == 0 && a.recorded &&
               (a.kind == "dp_imbalance" || (!j.recorded && a.kind == "slow_rank" && a.optional));
    });
    if (j.dp < 2 || j.zero3 || (!j.recorded && j.computeJitter <= 0)) return;
    const RunRecord run = recordRun(c);
    labelImbalance(c, run);
    labelChanceStragglers(c, run);
}

} // namespace prism::sim
