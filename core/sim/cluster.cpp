// The config side of the simulator: validate(), the cluster's topology and addresses, and the record count a
// config should produce (estimateRoceRecords).
#include "sim/placement.h"
#include "sim/simulator.h"
#include "sim/trace_import.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace prism::sim {

namespace {

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument(what); }

std::string leafName(int group, int rail) { return "leaf-g" + std::to_string(group) + "-r" + std::to_string(rail); }

std::string hostName(int h) {
    std::string n = std::to_string(h + 1);
    return "node-" + std::string(n.size() < 4 ? 4 - n.size() : 0, '0') + n;
}

// True when job `later` starts after `earlier` has ended, through its startAfterJob chain.
bool follows(const SimConfig& c, int later, int earlier) {
    for (int k = c.jobs[std::size_t(later)].startAfterJob; k >= 0; k = c.jobs[std::size_t(k)].startAfterJob)
        if (k == earlier) return true;
    return false;
}

} // namespace

IpAddr nicAddress(int host, int rail) {
    return IpAddr::v4(10, std::uint8_t(rail), std::uint8_t(host / 200), std::uint8_t(host % 200 + 1));
}

void validate(const SimConfig& c) {
    if (c.hosts < 1) invalid("the cluster needs at least one host");
    if (c.hosts > 200 * 256) invalid("at most 51200 hosts fit the 10.<rail>.x.y address plan");
    if (c.gpusPerHost < 1 || c.gpusPerHost > 255) invalid("gpusPerHost must be in 1..255");
    if (c.gpusPerNic < 1 || c.gpusPerHost % c.gpusPerNic != 0)
        invalid("gpusPerNic must be at least 1 and divide gpusPerHost (" + std::to_string(c.gpusPerHost) + ")");
    if (c.hostsPerGroup < 1) invalid("hostsPerGroup must be at least 1");
    if (c.spines < 1) invalid("the fabric needs at least one spine");
    if (!(c.linkGbps > 0) || !(c.nvlinkGbps > 0)) invalid("link bandwidths must be positive");
    if (c.linkLatencyNs < 0) invalid("linkLatencyNs must not be negative");
    if (c.activeTimeoutNs < 1) invalid("activeTimeoutNs must be positive");
    if (!(c.lossRate >= 0 && c.lossRate < 1)) invalid("lossRate must be in [0, 1)");
    if (c.maxSkewNs < 0) invalid("maxSkewNs must not be negative");
    if (c.transferJitter < 0) invalid("transferJitter must not be negative");
    if (c.storageRatePerHost < 0 || c.managementRatePerHost < 0 || c.ipv6Rate < 0)
        invalid("noise rates must not be negative");

    std::vector<std::set<int>> nicsOfJob;
    for (std::size_t i = 0; i < c.jobs.size(); ++i) {
        const JobSpec& j = c.jobs[i];
        const std::string w = jobLabel(j, i) + ": ";
        if (j.tp < 1 || j.pp < 1 || j.dp < 1) invalid(w + "tp, pp and dp must be at least 1");
        if (j.hosts.empty()) invalid(w + "no hosts");
        std::set<int> seen;
        for (int h : j.hosts) {
            if (h < 0 || h >= c.hosts) invalid(w + "host " + std::to_string(h) + " is not in the cluster");
            if (!seen.insert(h).second) invalid(w + "host " + std::to_string(h) + " listed twice");
        }
        const int n = j.gpuCount();
        const int hosts = int(j.hosts.size());
        if (n % hosts != 0)
            invalid(w + "tp*pp*dp = " + std::to_string(n) + " GPUs do not spread evenly over " +
                    std::to_string(hosts) + " hosts");
        const int g = n / hosts;
        if (g % j.tp != 0)
            invalid(w + "TP groups must stay inside a host: tp " + std::to_string(j.tp) + " does not divide the " +
                    std::to_string(g) + " GPUs used per host");
        if (j.firstGpu < 0 || j.firstGpu + g > c.gpusPerHost)
            invalid(w + "GPUs " + std::to_string(j.firstGpu) + ".." + std::to_string(j.firstGpu + g - 1) +
                    " do not exist on a host with " + std::to_string(c.gpusPerHost) + " GPUs");
        if (hosts < 2) invalid(w + "a job on one host sends nothing over the network");
        if (j.microBatches < 1) invalid(w + "microBatches must be at least 1");
        if (j.steps < 1) invalid(w + "steps must be at least 1");
        if (j.channels < 1 || j.channels > kMaxChannels)
            invalid(w + "channels must be in 1.." + std::to_string(kMaxChannels));
        if (j.buckets < 1) invalid(w + "buckets must be at least 1");
        if (j.forwardNs < 1 || !(j.backwardRatio > 0) || j.optimizerNs < 0 || j.computeJitter < 0)
            invalid(w + "compute times must be positive");
        if (j.activationBytes == 0 || j.gradientBytes == 0) invalid(w + "transfer sizes must be positive");
        if (j.startOffsetNs < 0) invalid(w + "startOffsetNs must not be negative");
        if (j.startAfterJob >= int(i) || j.startAfterJob < -1)
            invalid(w + "startAfterJob must name an earlier job");
        if (j.checkpointEvery < 0 || (j.checkpointEvery > 0 && j.checkpointPauseNs <= 0))
            invalid(w + "checkpointEvery must not be negative, and needs a positive checkpointPauseNs");
        if (j.checkpointEvery > 0 && j.checkpointEvery >= j.steps)
            invalid(w + "checkpointEvery " + std::to_string(j.checkpointEvery) + " leaves no stall inside " +
                    std::to_string(j.steps) + " steps");
        if (j.distributedOptimizer && j.dp < 2) invalid(w + "a distributed optimizer shards over DP: dp must be >= 2");
        if (j.zero3 && (j.pp != 1 || j.dp < 2 || j.distributedOptimizer || j.virtualStages != 1 ||
                        j.expertParallel != 0 || j.accumulation != 1))
            invalid(w + "ZeRO-3 / FSDP is modelled with pp = 1, dp >= 2 and none of the pipeline, expert or "
                        "distributed-optimizer styles");
        if (j.expertParallel != 0 && (j.expertParallel < 2 || j.expertParallel > j.dp || j.dp % j.expertParallel != 0))
            invalid(w + "expertParallel " + std::to_string(j.expertParallel) + " must be 0, or >= 2 and divide dp " +
                    std::to_string(j.dp));
        if (j.expertParallel != 0 && j.expertBytes == 0) invalid(w + "expertBytes must be positive");
        if (j.virtualStages < 1 || (j.virtualStages > 1 && (j.pp < 2 || j.microBatches % j.pp != 0)))
            invalid(w + "virtualStages must be >= 1; interleaving needs pp >= 2 and microBatches divisible by pp");
        if (j.accumulation < 1) invalid(w + "accumulation must be at least 1");
        if (j.overlapGradSync && (j.zero3 || j.dp < 2))
            invalid(w + "an overlapped gradient sync needs dp >= 2 and no ZeRO-3 (which syncs per layer group already)");
        if (j.tiedEmbedding && (j.pp < 2 || j.embeddingBytes == 0))
            invalid(w + "a tied embedding needs pp >= 2 (first and last stage) and positive embeddingBytes");
        if (!(j.lastStageFactor >= 1.0) || (j.lastStageFactor > 1.0 && j.pp < 2))
            invalid(w + "lastStageFactor must be >= 1, and > 1 only with pp >= 2");
        if (const RecordedOps* rec = j.recorded.get();
            rec && (rec->dp != j.dp || rec->pp != j.pp || rec->chunks != j.virtualStages ||
                    rec->microBatches != j.microBatches || rec->steps < j.steps ||
                    rec->computeNs.size() != rec->index(rec->steps, 0, 0, 0, 0, false) ||
                    rec->optimizerNs.size() != std::size_t(rec->steps) || j.zero3 || j.accumulation != 1 ||
                    j.crashes))
            invalid(w + "the recorded times do not fit the job (dp, pp, chunks, micro-batches or steps differ), or "
                        "the job has a style the recording cannot drive (ZeRO-3, accumulation, a crash)");
        if (!j.stageGradientBytes.empty() && int(j.stageGradientBytes.size()) != j.pp)
            invalid(w + "stageGradientBytes must give one size per stage");
        std::set<int> nics;
        for (int r = 0; r < n; ++r) nics.insert(nicOfRank(c, j, r));
        if (j.restart && (j.startAfterJob < 0 || nics != nicsOfJob[std::size_t(j.startAfterJob)]))
            invalid(w + "a restart follows the job it restarts (startAfterJob) on the same GPUs");
        for (std::size_t k = 0; k < i; ++k) {
            const bool shared = std::any_of(nics.begin(), nics.end(), [&](int x) { return nicsOfJob[k].count(x); });
            if (shared && !follows(c, int(i), int(k)))
                invalid(w + "shares GPUs with " + jobLabel(c.jobs[k], k) + " while both run");
        }
        nicsOfJob.push_back(std::move(nics));
    }
    for (std::size_t i = 0; i < c.anomalies.size(); ++i) {
        const AnomalySpec& a = c.anomalies[i];
        const std::string w = "anomaly " + std::to_string(i) + " (" + a.kind + "): ";
        if (a.job < 0 || a.job >= int(c.jobs.size())) invalid(w + "job " + std::to_string(a.job) + " does not exist");
        const JobSpec& j = c.jobs[std::size_t(a.job)];
        if (a.firstStep < 0 || a.lastStep < a.firstStep || a.lastStep >= j.steps)
            invalid(w + "steps " + std::to_string(a.firstStep) + ".." + std::to_string(a.lastStep) +
                    " are not inside the job's " + std::to_string(j.steps) + " steps");
        if (a.kind == "slow_rank" || a.kind == "slow_link") {
            if (rankOf(c, j, a.host, a.gpu) < 0)
                invalid(w + "host " + std::to_string(a.host) + " GPU " + std::to_string(a.gpu) + " is not " +
                        jobLabel(j, std::size_t(a.job)) + "'s");
            if (!(a.factor >= 1.0)) invalid(w + "factor must be at least 1");
        } else if (a.kind == "dp_imbalance" && a.recorded) {
        } else if (a.kind == "slow_stage" && a.recorded) {
            if (a.stage < 0 || a.stage >= j.pp) invalid(w + "stage " + std::to_string(a.stage) + " is not the job's");
        } else if (a.kind == "slow_step") {
            if (a.pauseNs <= 0) invalid(w + "pauseNs must be positive");
            if (a.firstStep < 1)
                invalid(w + "step 0 starts at the job's first flow, so a pause before it is invisible");
        } else {
            invalid(w + "unknown kind (expected slow_rank, slow_link or slow_step)");
        }
    }
}

Topology buildTopology(const SimConfig& c) {
    Topology topo;
    const int groups = (c.hosts + c.hostsPerGroup - 1) / c.hostsPerGroup;
    std::vector<std::string> spines;
    for (int k = 0; k < c.spines; ++k) spines.push_back("spine-" + std::to_string(k));
    for (int g = 0; g < groups; ++g)
        for (int r = 0; r < nicsPerHost(c); ++r) topo.switches.push_back({leafName(g, r), "leaf", spines});
    for (const std::string& s : spines) topo.switches.push_back({s, "spine", {}});
    for (int h = 0; h < c.hosts; ++h) {
        Host host;
        host.name = hostName(h);
        for (int r = 0; r < nicsPerHost(c); ++r) {
            Nic nic;
            nic.ip = nicAddress(h, r);
            for (int g = r * c.gpusPerNic; g < (r + 1) * c.gpusPerNic; ++g) nic.gpus.push_back(g);
            nic.rail = r;
            nic.switchName = leafName(h / c.hostsPerGroup, r);
            host.nics.push_back(int(topo.nics.size()));
            topo.nics.push_back(std::move(nic));
        }
        topo.hosts.push_back(std::move(host));
    }
    topo.index();
    return topo;
}

std::uint64_t estimateRoceRecords(const SimConfig& c) {
    const double bytesPerNs = c.linkGbps / 8.0 / std::max(c.gpusPerNic, 1);
    const double timeout = double(std::max<std::int64_t>(c.activeTimeoutNs, 1));
    // Records of one transfer per channel after active-timeout splits, at nominal speed.
    auto pieces = [&](double durationNs) { return std::max(1.0, std::ceil(durationNs / timeout)); };
    double total = 0.0;
    for (const JobSpec& j : c.jobs) {
        if (j.hosts.empty() || j.gpuCount() % int(j.hosts.size()) != 0 || j.buckets < 1) continue;
        auto host = [&](int t, int d, int p) { return nicOfRank(c, j, t + j.tp * (d + j.dp * p)) / nicsPerHost(c); };
        // Crossing pairs: pp between stages, wrap between the last stage and stage 0, dp ring neighbours, tied
        // the embedding pairs, ep ordered pairs of EP peers.
        double pp = 0, dp = 0, wrap = 0, tied = 0, ep = 0;
        for (int p = 0; p < j.pp; ++p)
            for (int d = 0; d < j.dp; ++d)
                for (int t = 0; t < j.tp; ++t) {
                    if (p + 1 < j.pp && host(t, d, p) != host(t, d, p + 1)) ++pp;
                    if (j.dp > 1 && host(t, d, p) != host(t, (d + 1) % j.dp, p)) ++dp;
                    if (p == 0 && j.pp > 1 && host(t, d, 0) != host(t, d, j.pp - 1)) {
                        wrap += j.virtualStages - 1;
                        tied += j.tiedEmbedding ? 2 : 0;
                    }
                    const int block = d - d % std::max(j.expertParallel, 1);
                    for (int e = block; e < block + j.expertParallel; ++e)
                        ep += e != d && host(t, d, p) != host(t, e, p);
                }
        const double lat = double(c.linkLatencyNs);
        const double ppBytes = double(j.activationBytes) / j.tp;
        const double chunk = double(j.gradientBytes) / j.buckets / j.dp;
        const double ppRecords = (pp * j.virtualStages + wrap) * 2 * j.microBatches * j.accumulation *
                                 pieces(lat + ppBytes / bytesPerNs);
        double dpRecords = 0;
        if (j.zero3) // per layer group two all-gathers and a reduce-scatter, dp - 1 chunk steps each
            dpRecords = dp * 3 * j.buckets * pieces((j.dp - 1) * (lat + chunk / bytesPerNs));
        else if (j.distributedOptimizer) // a reduce-scatter and an all-gather of dp - 1 chunk steps
            dpRecords = dp * 2 * j.buckets * pieces((j.dp - 1) * (lat + chunk / bytesPerNs));
        else
            dpRecords = dp * j.buckets * pieces(2.0 * (j.dp - 1) * (lat + chunk / bytesPerNs));
        const double other = tied * pieces(lat + double(j.embeddingBytes) / bytesPerNs) +
                             ep * 2 * 2 * j.microBatches * j.virtualStages * j.accumulation;
        total += (ppRecords + dpRecords + other) * j.channels * j.steps;
    }
    return std::uint64_t(std::llround(total));
}

} // namespace prism::sim
